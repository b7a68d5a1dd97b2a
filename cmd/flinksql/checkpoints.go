package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/flinksql/flinksql/checkpoint"
)

const checkpointsUsage = `Usage:
  flinksql checkpoints DIR [--job NAME] [--verify] [-D s3.endpoint=...]...

Lists the retained checkpoints of every job under DIR (a state.checkpoints.dir:
file:///path, /path or s3://bucket/prefix), or of job NAME only: id, completion
time (UTC), full size, bytes uploaded by that checkpoint, and the number of
shared and private files; then, when the latest one holds keyed state, the
state of each operator in it: subtasks, backend, entries (~: estimated),
bytes in memory and on local disk when it was taken, and its full size. With --verify, checks that every file a retained
checkpoint references exists with the recorded size and SHA-256, and exits
with status 1 if one does not.

Flags:
`

// runCheckpoints is 'flinksql checkpoints'.
func runCheckpoints(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flinksql checkpoints", flag.ContinueOnError)
	fs.SetOutput(stderr)
	job := fs.String("job", "", "list only the checkpoints of job `NAME` (its pipeline.name)")
	verify := fs.Bool("verify", false, "check every referenced file's existence, size and SHA-256")
	conf := setFlags{}
	fs.Var(conf, "D", "set a storage option (repeatable): -D s3.endpoint=http://localhost:9000 -D s3.path.style.access=true\n"+
		"(also s3.access-key, s3.secret-key, s3.region; without keys the standard AWS credential chain is used)")
	fs.Usage = func() {
		fmt.Fprint(stderr, checkpointsUsage)
		fs.PrintDefaults()
	}
	// Flags may follow DIR.
	positional, rc := parseInterspersed(fs, args)
	if rc >= 0 {
		return rc
	}
	if len(positional) != 1 {
		fmt.Fprintf(stderr, "flinksql checkpoints: expected one checkpoint directory, got %d arguments\n", len(positional))
		fs.Usage()
		return 2
	}
	dir := positional[0]

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := checkpoint.OpenStorage(ctx, dir, conf)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql checkpoints: %v\n", err)
		return 1
	}
	jobs := []string{*job}
	if *job == "" {
		if jobs, err = checkpoint.Jobs(ctx, st); err != nil {
			fmt.Fprintf(stderr, "flinksql checkpoints: %v\n", err)
			return 1
		}
		if len(jobs) == 0 {
			fmt.Fprintf(stdout, "No checkpoints under %s.\n", dir)
			return 0
		}
	}
	failed := false
	for i, name := range jobs {
		mds, err := checkpoint.ListCheckpoints(ctx, st, name)
		if err != nil {
			fmt.Fprintf(stderr, "flinksql checkpoints: %v\n", err)
			return 1
		}
		if len(mds) == 0 {
			fmt.Fprintf(stderr, "flinksql checkpoints: job %q has no checkpoints under %s\n", name, dir)
			return 1
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printCheckpoints(stdout, name, mds)
		if !*verify {
			continue
		}
		checked := map[string]string{}
		problems := 0
		for _, md := range mds {
			found, err := checkpoint.Verify(ctx, md, checked)
			for _, p := range found {
				fmt.Fprintln(stdout, p)
			}
			problems += len(found)
			if err != nil {
				fmt.Fprintf(stderr, "flinksql checkpoints: verifying checkpoint %d of job %s: %v\n", md.ID, name, err)
				return 1
			}
		}
		switch problems {
		case 0:
			fmt.Fprintf(stdout, "Verified %d files: all present with the recorded size and SHA-256.\n", len(checked))
		default:
			failed = true
			fmt.Fprintf(stdout, "Verified %d files: %d %s.\n", len(checked), problems, plural(problems, "problem", "problems"))
		}
	}
	if failed {
		return 1
	}
	return 0
}

func printCheckpoints(w io.Writer, job string, mds []*checkpoint.Metadata) {
	fmt.Fprintf(w, "Job %s: %d retained %s\n", job, len(mds), plural(len(mds), "checkpoint", "checkpoints"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCOMPLETED (UTC)\tFULL BYTES\tUPLOADED BYTES\tSHARED FILES\tPRIVATE FILES")
	for _, md := range mds {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\n", md.ID, md.Timestamp.UTC().Format("2006-01-02 15:04:05.000"),
			md.FullBytes, md.UploadedBytes, md.SharedFiles(), md.PrivateFiles())
	}
	tw.Flush()
	printStateSizes(w, mds[len(mds)-1])
}

// printStateSizes lists the state of each operator in checkpoint md when
// it holds keyed state, whose instances record their size: entries (~ an
// estimate, rocksdb), bytes in memory and on local disk when sealed, and
// the checkpoint's full bytes. Operators without keyed state show "-".
func printStateSizes(w io.Writer, md *checkpoint.Metadata) {
	sizes := md.StateSizes()
	keyed := false
	for _, s := range sizes {
		keyed = keyed || s.Keyed
	}
	if !keyed {
		return
	}
	fmt.Fprintf(w, "State per operator in checkpoint %d:\n", md.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATOR\tSUBTASKS\tBACKEND\tENTRIES\tMEMORY BYTES\tDISK BYTES\tFULL BYTES")
	for _, s := range sizes {
		entries, mem, disk := "-", "-", "-"
		if s.Keyed {
			entries = fmt.Sprint(s.Entries)
			if s.Estimated {
				entries = "~" + entries
			}
			mem, disk = fmt.Sprint(s.MemoryBytes), fmt.Sprint(s.DiskBytes)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\n", s.Operator, s.Subtasks, s.StateKind, entries, mem, disk, s.FullBytes)
	}
	tw.Flush()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
