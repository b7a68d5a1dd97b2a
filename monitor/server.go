// Package monitor serves what an operator of flinksql's jobs watches: a
// REST API with Flink's paths and JSON fields (rest.go), the web
// dashboard on the same port (web/, embedded in the binary), and
// Prometheus metrics with Flink's names (prom.go) on a port of their own.
// It reads the jobs through the supervisor (package jobs) and controls
// them with the same calls as the shell's STOP JOB and the control socket.
package monitor

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flinksql/flinksql/jobs"
)

//go:embed web
var webFiles embed.FS

// Config says where to serve.
type Config struct {
	// RESTAddress and RESTPort are rest.address and rest.port; port 0
	// picks a free one. Serve without a REST port (Port < 0) serves no
	// REST API.
	RESTAddress string
	RESTPort    int
	// PromAddress and PromPort are where /metrics is served (port < 0:
	// not at all; 0: a free one).
	PromAddress string
	PromPort    int
	// Version is what /config and /overview report as flink-version.
	Version string
	// SampleInterval is how often rates are computed (default 1 s).
	SampleInterval time.Duration
	// Host is the host label of the metrics (default "localhost").
	Host string
}

// Server is a running monitor.
type Server struct {
	sampler  *sampler
	api      *restAPI
	cancel   context.CancelFunc
	stop     chan struct{}
	wg       sync.WaitGroup
	servers  []*http.Server
	restAddr string
	promAddr string
}

// Start listens and serves until Close.
func Start(sup *jobs.Supervisor, cfg Config) (*Server, error) {
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = time.Second
	}
	if cfg.Host == "" {
		cfg.Host = "localhost"
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{sampler: newSampler(sup, cfg.SampleInterval), cancel: cancel, stop: make(chan struct{})}
	s.api = &restAPI{sup: sup, sampler: s.sampler, version: cfg.Version, now: time.Now, ops: map[string]*operation{}, ctx: ctx}
	var listeners []net.Listener
	fail := func(err error) (*Server, error) {
		for _, ln := range listeners {
			_ = ln.Close()
		}
		cancel()
		return nil, err
	}
	if cfg.RESTPort >= 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.RESTAddress, strconv.Itoa(cfg.RESTPort)))
		if err != nil {
			return fail(fmt.Errorf("the REST API cannot listen on rest.address '%s', rest.port %d: %w", cfg.RESTAddress, cfg.RESTPort, err))
		}
		listeners = append(listeners, ln)
		mux := http.NewServeMux()
		s.api.routes(mux)
		sub, _ := fs.Sub(webFiles, "web")
		mux.Handle("GET /", http.FileServerFS(sub))
		s.servers = append(s.servers, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second})
		s.restAddr = ln.Addr().String()
	}
	if cfg.PromPort >= 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.PromAddress, strconv.Itoa(cfg.PromPort)))
		if err != nil {
			return fail(fmt.Errorf("the Prometheus reporter cannot listen on metrics.reporter.prom.port %d: %w", cfg.PromPort, err))
		}
		listeners = append(listeners, ln)
		reg := prometheus.NewRegistry()
		reg.MustRegister(&collector{sup: sup, sampler: s.sampler, host: cfg.Host})
		mux := http.NewServeMux()
		h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
		mux.Handle("GET /metrics", h)
		mux.Handle("GET /", h) // Flink's reporter answers on every path
		s.servers = append(s.servers, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second})
		s.promAddr = ln.Addr().String()
	}
	for i, srv := range s.servers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := srv.Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				_ = err // the listener failed: nothing to do but stop serving
			}
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sampler.run(s.stop)
	}()
	return s, nil
}

// RESTAddr is the address the REST API and the dashboard listen on ("" when off).
func (s *Server) RESTAddr() string { return s.restAddr }

// PromAddr is the address of /metrics ("" when off).
func (s *Server) PromAddr() string { return s.promAddr }

// Close stops serving, ends savepoint operations' waits and waits for
// every goroutine of the server.
func (s *Server) Close() {
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	close(s.stop)
	s.cancel()
	s.api.wg.Wait()
	s.wg.Wait()
}
