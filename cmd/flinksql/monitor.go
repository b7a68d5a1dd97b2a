package main

import (
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/flinksql/flinksql/monitor"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/session"
)

// startMonitor starts the REST API with the dashboard and the Prometheus
// endpoint as the options say. The REST API runs in the interactive
// shell (its jobs run as long as the shell does) and, with -f or -e, only
// when rest.port or rest.address was given. In the shell, a port that is
// taken (another shell runs) is reported and the shell goes on without
// it; with -f or -e, where the user asked for it, it is an error. The
// Prometheus endpoint runs when metrics.reporter.prom.port is set.
func startMonitor(sess *session.Session, interactive bool, stderr io.Writer) (stop func(), err error) {
	restOn := interactive || sess.IsSet(options.RESTPort.Key) || sess.IsSet(options.RESTAddress.Key)
	addr := sess.Get(options.RESTAddress.Key)
	if addr == "" {
		addr = "127.0.0.1"
	}
	cfg := monitor.Config{RESTAddress: addr, RESTPort: -1, PromAddress: addr, PromPort: -1, Version: versionString()}
	if restOn {
		cfg.RESTPort, _ = strconv.Atoi(sess.Get(options.RESTPort.Key)) // checked when set
	}
	if p := sess.Get(options.PromPort.Key); p != "" {
		from, to, _ := options.PortRange(p) // checked when set
		cfg.PromPort = firstFreePort(addr, from, to)
	}
	if cfg.RESTPort < 0 && cfg.PromPort < 0 {
		return func() {}, nil
	}
	srv, err := monitor.Start(sess.Jobs(), cfg)
	if err != nil && interactive && cfg.RESTPort >= 0 && !sess.IsSet(options.RESTPort.Key) {
		fmt.Fprintf(stderr, "[WARN] No REST API and dashboard: %v (set another port with -D rest.port=PORT).\n", err)
		cfg.RESTPort = -1
		if cfg.PromPort < 0 {
			return func() {}, nil
		}
		srv, err = monitor.Start(sess.Jobs(), cfg)
	}
	if err != nil {
		return nil, err
	}
	if a := srv.RESTAddr(); a != "" {
		fmt.Fprintf(stderr, "REST API and dashboard: http://%s/\n", a)
	}
	if a := srv.PromAddr(); a != "" {
		fmt.Fprintf(stderr, "Prometheus metrics: http://%s/metrics\n", a)
	}
	return srv.Close, nil
}

// firstFreePort is the first port of from…to that can be listened on
// (Flink's reporter takes the first free one of a range); from when none
// is, so that the error names it.
func firstFreePort(addr string, from, to int) int {
	if from == to {
		return from
	}
	for p := from; p <= to; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p)))
		if err == nil {
			ln.Close()
			return p
		}
	}
	return from
}
