package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/flinksql/flinksql/jobs"
	"github.com/flinksql/flinksql/units"
)

// The control socket: every flinksql process that runs a session serves
// the control API of package jobs (GET /v1/jobs, POST
// /v1/jobs/{id}/stop, POST /v1/jobs/{id}/savepoint) over HTTP on a unix
// socket <control dir>/<pid>.sock. The control dir is $FLINKSQL_CONTROL_DIR
// or <temp dir>/flinksql-control-<uid>, created with mode 0700: only the
// user that runs the jobs can reach them. 'flinksql stop', 'flinksql
// savepoint' and 'flinksql jobs' ask every socket there.

// ControlDirEnv names the control directory.
const ControlDirEnv = "FLINKSQL_CONTROL_DIR"

func controlDir() string {
	if d := os.Getenv(ControlDirEnv); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "flinksql-control-"+strconv.Itoa(os.Getuid()))
}

// startControl serves the supervisor's control API on this process's
// socket; stop closes it and waits for its goroutine. A failure to listen
// is reported and leaves the process without a control socket.
func startControl(sup *jobs.Supervisor, stderr io.Writer) (stop func()) {
	dir := controlDir()
	if err := privateDir(dir); err != nil {
		fmt.Fprintf(stderr, "[WARN] No control socket (flinksql stop/savepoint cannot reach this process): %v\n", err)
		return func() {}
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	_ = os.Remove(path) // a socket left by an earlier process of this pid
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintf(stderr, "[WARN] No control socket (flinksql stop/savepoint cannot reach this process): %v\n", err)
		return func() {}
	}
	srv := &http.Server{Handler: sup.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ln)
	}()
	return func() {
		_ = srv.Close()
		wg.Wait()
		_ = os.Remove(path)
	}
}

// privateDir makes dir, or checks that it exists, as a directory of this
// user's that nobody else can enter: in a shared temporary directory
// another user could have created it to receive the requests.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || (ok && int(st.Uid) != os.Getuid()) {
		return fmt.Errorf("%s must be a directory of user %d with mode 0700 (set $%s to another one)", dir, os.Getuid(), ControlDirEnv)
	}
	return nil
}

// controlClient talks to the control sockets of a directory.
type controlClient struct{ dir string }

func (c controlClient) sockets() ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(c.dir, "*.sock"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	return matches, nil
}

func httpClient(socket string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

// jobsOf lists the jobs of the process behind socket.
func jobsOf(socket string) ([]jobs.ControlJob, error) {
	resp, err := httpClient(socket, 5*time.Second).Get("http://flinksql/v1/jobs")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []jobs.ControlJob
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: bad answer: %w", socket, err)
	}
	return out, nil
}

// find returns the socket of the process running job id.
func (c controlClient) find(id string) (string, error) {
	socks, err := c.sockets()
	if err != nil {
		return "", err
	}
	for _, s := range socks {
		js, err := jobsOf(s)
		if err != nil {
			continue // a process that ended without removing its socket
		}
		for _, j := range js {
			if j.ID == id {
				return s, nil
			}
		}
	}
	return "", fmt.Errorf("no flinksql process with control sockets in %s runs job %s (see 'flinksql jobs')", c.dir, id)
}

// post sends a stop or savepoint request for job id and waits for the
// savepoint, at most timeout (0: no bound). A request that times out is
// not withdrawn: the process goes on with it.
func (c controlClient) post(id, action string, q url.Values, timeout time.Duration) (string, error) {
	sock, err := c.find(id)
	if err != nil {
		return "", err
	}
	resp, err := httpClient(sock, timeout).Post("http://flinksql/v1/jobs/"+url.PathEscape(id)+"/"+action+"?"+q.Encode(), "", nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			what := "stopping with a savepoint"
			if action == "savepoint" {
				what = "taking a savepoint"
			}
			return "", fmt.Errorf("job %s did not finish %s within %v (--timeout): the process behind %s goes on with it, and its log says when the savepoint is complete; 'flinksql jobs' shows the job's status. Raise --timeout to wait longer", id, what, timeout, sock)
		}
		return "", err
	}
	defer resp.Body.Close()
	var res jobs.ControlResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return "", fmt.Errorf("bad answer from %s: %w", sock, err)
	}
	if res.Error != "" || resp.StatusCode != http.StatusOK {
		return "", errors.New(res.Error)
	}
	return res.SavepointPath, nil
}

const stopUsage = `Usage:
  flinksql stop [--savepoint DIR] [--drain] [--timeout DURATION] JOB

Stops job JOB of a running flinksql process (its id, as SHOW JOBS or
'flinksql jobs' print it) with a savepoint, as STOP JOB 'JOB' WITH
SAVEPOINT [WITH DRAIN] does in its shell: the sources stop, a final
checkpoint commits the output of exactly-once sinks, and the savepoint is
written into DIR (default: the job's 'state.savepoints.dir'). Prints the
savepoint's path. --drain first emits the final watermark, so event-time
windows fire. --timeout bounds the wait (default 1 min, as Flink's
client.timeout; 0 waits as long as it takes); when it passes, the command
fails with a message saying so, and the process goes on stopping the job.

Flags:
`

const savepointUsage = `Usage:
  flinksql savepoint [--dir DIR] [--timeout DURATION] JOB

Writes a savepoint of job JOB of a running flinksql process without
stopping it, into DIR (default: the job's 'state.savepoints.dir'), and
prints its path. --timeout bounds the wait as for 'flinksql stop'.

Flags:
`

func controlFlags(name, usage string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("control-dir", controlDir(), "the `directory` of the processes' control sockets ($"+ControlDirEnv+")")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs, dir
}

// parseInterspersed parses flags that may come before and after the
// positional arguments, which it returns. rc is the exit code when the
// command ends here (0 after -help, 2 on a bad flag), else -1.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, int) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, 0
			}
			return nil, 2
		}
		if fs.NArg() == 0 {
			return positional, -1
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// defaultClientTimeout is how long stop and savepoint wait by default:
// Flink's client.timeout.
const defaultClientTimeout = time.Minute

// durationFlag is a flag in Flink's duration syntax ("1 min", "90 s").
type durationFlag struct{ d time.Duration }

func (f *durationFlag) String() string {
	if f == nil {
		return ""
	}
	return f.d.String()
}
func (f *durationFlag) Set(v string) error {
	d, err := units.ParseDuration(v)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("a timeout cannot be negative: %s", v)
	}
	f.d = d
	return nil
}

func timeoutFlag(fs *flag.FlagSet) *durationFlag {
	f := &durationFlag{d: defaultClientTimeout}
	fs.Var(f, "timeout", "wait at most this `duration` for the savepoint (Flink's duration syntax: 90 s, 5 min; 0: no bound)")
	return f
}

// runStop is 'flinksql stop'.
func runStop(args []string, stdout, stderr io.Writer) int {
	fs, dir := controlFlags("flinksql stop", stopUsage, stderr)
	spDir := fs.String("savepoint", "", "write the savepoint into `DIR` instead of the job's state.savepoints.dir")
	drain := fs.Bool("drain", false, "emit the final watermark before stopping (windows fire)")
	timeout := timeoutFlag(fs)
	pos, rc := parseInterspersed(fs, args)
	if rc >= 0 {
		return rc
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "flinksql stop: expected one job id, got %d arguments\n", len(pos))
		fs.Usage()
		return 2
	}
	q := url.Values{}
	if *spDir != "" {
		q.Set("dir", *spDir)
	}
	if *drain {
		q.Set("drain", "true")
	}
	path, err := controlClient{*dir}.post(pos[0], "stop", q, timeout.d)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql stop: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Savepoint completed. Path: %s\n", path)
	return 0
}

// runSavepoint is 'flinksql savepoint'.
func runSavepoint(args []string, stdout, stderr io.Writer) int {
	fs, dir := controlFlags("flinksql savepoint", savepointUsage, stderr)
	spDir := fs.String("dir", "", "write the savepoint into `DIR` instead of the job's state.savepoints.dir")
	timeout := timeoutFlag(fs)
	pos, rc := parseInterspersed(fs, args)
	if rc >= 0 {
		return rc
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "flinksql savepoint: expected one job id, got %d arguments\n", len(pos))
		fs.Usage()
		return 2
	}
	q := url.Values{}
	if *spDir != "" {
		q.Set("dir", *spDir)
	}
	path, err := controlClient{*dir}.post(pos[0], "savepoint", q, timeout.d)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql savepoint: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Savepoint completed. Path: %s\n", path)
	return 0
}

// runJobs is 'flinksql jobs': the jobs of every running flinksql process.
func runJobs(args []string, stdout, stderr io.Writer) int {
	fs, dir := controlFlags("flinksql jobs", "Usage:\n  flinksql jobs\n\nLists the jobs of the running flinksql processes.\n\nFlags:\n", stderr)
	pos, rc := parseInterspersed(fs, args)
	if rc >= 0 {
		return rc
	}
	if len(pos) != 0 {
		fs.Usage()
		return 2
	}
	socks, err := controlClient{*dir}.sockets()
	if err != nil {
		fmt.Fprintf(stderr, "flinksql jobs: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB ID\tNAME\tSTATUS\tPROCESS")
	for _, s := range socks {
		js, err := jobsOf(s)
		if err != nil {
			continue
		}
		for _, j := range js {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.ID, j.Name, j.Status, strings.TrimSuffix(filepath.Base(s), ".sock"))
		}
	}
	tw.Flush()
	return 0
}
