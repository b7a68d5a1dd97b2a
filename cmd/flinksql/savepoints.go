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
)

const savepointsUsage = `Usage:
  flinksql savepoints PATH [--verify] [-D s3.endpoint=...]...

Describes the savepoint at PATH (a savepoint directory as STOP JOB ... WITH
SAVEPOINT printed it, or its _metadata; a checkpoint's chk-<n> directory is
described the same way), or every savepoint in the directory PATH (a
state.savepoints.dir): the job and checkpoint it was taken of, its format
version, the state backend that wrote it, the SQL of the job, and per
operator its identity (its id and node; the declared states of keyed
operators), subtasks, key groups, state format, entries and bytes. With --verify, checks every file's existence, size and SHA-256 and
exits with status 1 if one differs.

Flags:
`

// runSavepoints is 'flinksql savepoints'.
func runSavepoints(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flinksql savepoints", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verify := fs.Bool("verify", false, "check every referenced file's existence, size and SHA-256")
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
	if len(md.SQL) > 0 {
		fmt.Fprintln(w, "SQL:")
		for _, s := range md.SQL {
			for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
	}
	// Each operator once: its identity (the id state is restored by, its
	// node) and, for keyed operators, its declared states.
	seen := map[string]bool{}
	header := false
	for _, in := range md.Instances {
		if seen[in.Operator] || (in.Name == "" && len(in.States) == 0) {
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
