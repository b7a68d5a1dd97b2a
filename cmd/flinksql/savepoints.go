package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/session"
)

const savepointsUsage = `Usage:
  flinksql savepoints PATH [--verify] [--against job.sql] [-D key=value]...

Describes the savepoint at PATH (a savepoint directory as STOP JOB ... WITH
SAVEPOINT printed it, or its _metadata; a checkpoint's chk-<n> directory is
described the same way), or every savepoint in the directory PATH (a
state.savepoints.dir): the job and checkpoint it was taken of, its format
version, the state backend that wrote it, the SQL of the job, and per
operator its identity (its id and node; the declared states of keyed
operators), subtasks, key groups, state format, entries and bytes. With --verify, checks every file's existence, size and SHA-256 and
exits with status 1 if one differs.

With --against job.sql, runs the script's DDL and SET statements (-D sets
options first, as SET would) and prints, for each INSERT or statement set of
it, EXPLAIN MIGRATION FROM PATH: per stateful operator whether a restore
keeps its state, starts it empty, drops it or cannot read it, and the overall
result; it exits with status 1 when the restore would be refused. Nothing runs.

Flags:
`

// runSavepoints is 'flinksql savepoints'.
func runSavepoints(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flinksql savepoints", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verify := fs.Bool("verify", false, "check every referenced file's existence, size and SHA-256")
	against := fs.String("against", "", "print EXPLAIN MIGRATION of the job `script` (.sql) against the savepoint")
	conf := setFlags{}
	fs.Var(conf, "D", "set a storage option (repeatable): -D s3.endpoint=http://localhost:9000 -D s3.path.style.access=true")
	fs.Usage = func() {
		fmt.Fprint(stderr, savepointsUsage)
		fs.PrintDefaults()
	}
	positional, rc := parseInterspersed(fs, args)
	if rc >= 0 {
		return rc
	}
	if len(positional) != 1 {
		fmt.Fprintf(stderr, "flinksql savepoints: expected one savepoint or savepoint directory, got %d arguments\n", len(positional))
		fs.Usage()
		return 2
	}
	path := positional[0]
	if !strings.Contains(path, "://") && !filepath.IsAbs(path) {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var mds []*checkpoint.Metadata
	if md, err := checkpoint.Load(ctx, path, conf); err == nil {
		mds = []*checkpoint.Metadata{md}
	} else if list, lerr := checkpoint.ListSavepoints(ctx, path, conf); lerr == nil && len(list) > 0 {
		mds = list
	} else {
		if lerr == nil {
			lerr = err
		}
		fmt.Fprintf(stderr, "flinksql savepoints: no savepoint at %s: %v\n", path, lerr)
		return 1
	}
	if *against != "" {
		return explainAgainst(ctx, path, *against, conf, stdout, stderr)
	}
	failed := false
	for i, md := range mds {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printSavepoint(stdout, md)
		if *verify {
			found, err := checkpoint.Verify(ctx, md, map[string]string{})
			for _, p := range found {
				fmt.Fprintln(stdout, p)
			}
			if err != nil {
				fmt.Fprintf(stderr, "flinksql savepoints: verifying %s: %v\n", md.Location(), err)
				return 1
			}
			if len(found) > 0 {
				failed = true
			} else {
				fmt.Fprintln(stdout, "Verified: every file present with the recorded size and SHA-256.")
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

func printSavepoint(w io.Writer, md *checkpoint.Metadata) {
	what := "Checkpoint"
	if md.Type == checkpoint.TypeSavepoint {
		what = fmt.Sprintf("Savepoint (format %d)", md.SavepointFormat)
	}
	fmt.Fprintf(w, "%s %s\n", what, md.Location())
	fmt.Fprintf(w, "  job: %s, checkpoint %d, taken %s UTC\n", md.Job, md.ID, md.Timestamp.UTC().Format("2006-01-02 15:04:05.000"))
	if md.StateBackend != "" {
		fmt.Fprintf(w, "  written by state backend: %s (restorable by hashmap and rocksdb)\n", md.StateBackend)
	}
	if md.MaxParallelism > 0 {
		fmt.Fprintf(w, "  max parallelism (key groups): %d\n", md.MaxParallelism)
	}
	if md.Plan != "" {
		fmt.Fprintf(w, "  plan fingerprint: %s\n", md.Plan)
	}
	files := md.SharedFiles() + md.PrivateFiles()
	fmt.Fprintf(w, "  size: %d bytes in %d %s\n", md.FullBytes, files, plural(files, "file", "files"))
	switch {
	case len(md.Script) > 0:
		// The whole job script: what plans the job again.
		fmt.Fprintln(w, "Job script:")
		for _, s := range md.Script {
			s = strings.TrimSpace(s)
			if !strings.HasSuffix(s, ";") {
				s += ";"
			}
			for _, line := range strings.Split(s, "\n") {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
	case len(md.SQL) > 0:
		fmt.Fprintln(w, "SQL:")
		for _, s := range md.SQL {
			for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
	}
	if len(md.Operators) > 0 {
		printOperatorStates(w, md)
	}
	// Each operator once: its identity (the id state is restored by, its
	// node) and, for keyed operators, its declared states.
	seen := map[string]bool{}
	header := len(md.Operators) > 0
	for _, in := range md.Instances {
		if header || seen[in.Operator] || (in.Name == "" && len(in.States) == 0) {
			continue
		}
		seen[in.Operator] = true
		if !header {
			fmt.Fprintln(w, "Operator identities:")
			header = true
		}
		fmt.Fprintf(w, "  %s: %s\n", in.Operator, in.Name)
		for _, d := range in.States {
			ttl := ""
			if d.TTL > 0 {
				ttl = ", TTL " + d.TTL.String()
			}
			fmt.Fprintf(w, "    state %s: %s, codec %s%s\n", d.Name, d.Kind, d.Codec, ttl)
		}
	}
	fmt.Fprintln(w, "Operators:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  OPERATOR\tSUBTASK\tKEY GROUPS\tFORMAT\tENTRIES\tBYTES\tPOSITION BYTES")
	for _, in := range md.Instances {
		kgs := "-"
		if in.KeyGroups[0] >= 0 {
			kgs = fmt.Sprintf("%d-%d", in.KeyGroups[0], in.KeyGroups[1])
		}
		format := in.Format
		if format == "" {
			format = "entry store (" + in.StateKind + ")"
		}
		entries := "-"
		if in.Format == checkpoint.EntriesFormat || in.Format == checkpoint.KeyedFormat {
			entries = fmt.Sprint(in.StateEntries)
			if in.EntriesEstimated {
				entries = "~" + entries
			}
		}
		fmt.Fprintf(tw, "  %s\t%d/%d\t%s\t%s\t%s\t%d\t%d\n", in.Operator, in.Subtask, in.Parallelism, kgs, format, entries, in.FullBytes, len(in.Position))
	}
	tw.Flush()
}

// printOperatorStates prints each stateful operator's identity and the
// state schema a restore compares (checkpoint.PlanMigration).
func printOperatorStates(w io.Writer, md *checkpoint.Metadata) {
	fmt.Fprintln(w, "Operator identities:")
	for _, o := range md.Operators {
		fmt.Fprintf(w, "  %s: %s\n", o.ID, o.Name)
		if o.Table != "" {
			fmt.Fprintf(w, "    table: %s\n", o.Table)
		}
		if len(o.Keys) > 0 {
			keys := make([]string, len(o.Keys))
			for i, k := range o.Keys {
				keys[i] = k.Name + " " + k.Type
			}
			fmt.Fprintf(w, "    keys: %s\n", strings.Join(keys, ", "))
		}
		for _, a := range o.Aggs {
			fmt.Fprintf(w, "    accumulator %s: %s, slots %d-%d\n", a.Call, a.Result, a.Offset, a.Offset+a.Width-1)
		}
		if len(o.Upstream) > 0 {
			fmt.Fprintf(w, "    reads from: %s\n", strings.Join(o.Upstream, ", "))
		}
		for _, d := range o.States {
			ttl := ""
			if d.TTL > 0 {
				ttl = ", TTL " + d.TTL.String()
			}
			fmt.Fprintf(w, "    state %s: %s, codec %s%s\n", d.Name, d.Kind, d.Codec, ttl)
		}
	}
}

// explainAgainst is 'flinksql savepoints PATH --against job.sql'.
func explainAgainst(ctx context.Context, path, script string, conf setFlags, stdout, stderr io.Writer) int {
	text, err := os.ReadFile(script)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql savepoints: --against: %v\n", err)
		return 1
	}
	sess, err := session.New(session.Options{Stdout: stdout, Stderr: stderr, Config: conf})
	if err != nil {
		fmt.Fprintf(stderr, "flinksql savepoints: %v\n", err)
		return 2
	}
	defer sess.Close()
	out, refused, err := sess.ExplainMigrationScript(ctx, path, string(text))
	if err != nil {
		fmt.Fprintf(stderr, "flinksql savepoints: --against %s: %v\n", script, err)
		return 1
	}
	fmt.Fprint(stdout, out)
	if refused {
		return 1
	}
	return 0
}
