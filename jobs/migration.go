package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/plan"
)

// ExplainMigration judges, without running anything, what restoring the
// savepoint or checkpoint at path into the job of pl (with the options of
// conf) would do with each stateful operator's state: EXPLAIN MIGRATION.
// path is what execution.state-recovery.path takes (a relative path names
// a checkpoint under state.checkpoints.dir).
//
// refused says whether the restore would be refused: incompatible state,
// dropped state without execution.state-recovery.ignore-unclaimed-state,
// or another number of key groups.
func (s *Supervisor) ExplainMigration(ctx context.Context, pl *plan.Plan, conf *options.Values, path string) (text string, refused bool, err error) {
	md, err := loadSnapshot(ctx, conf, path)
	if err != nil {
		return "", false, err
	}
	g, err := pl.JobGraph(jobName(conf, pl))
	if err != nil {
		return "", false, err
	}
	ops, err := exec.DescribeStates(g, s.cfg.TempDir)
	if err != nil {
		return "", false, fmt.Errorf("describing the job's state: %w", err)
	}
	mg, err := checkpoint.PlanMigration(md, ops, pl.Fingerprint(), checkpoint.PositionalIDs(g))
	if err != nil {
		return "", false, err
	}
	ignore := options.IgnoreUnclaimedState.Get(conf)
	var notes []string
	if md.MaxParallelism > 0 && options.MaxParallelism.IsSet(conf) && options.MaxParallelism.Get(conf) != md.MaxParallelism {
		notes = append(notes, fmt.Sprintf("refused: the snapshot has %d key groups ('pipeline.max-parallelism') and the job sets %d; leave it unset to adopt the snapshot's",
			md.MaxParallelism, options.MaxParallelism.Get(conf)))
	}
	if err := mg.Check(ignore); err != nil || len(notes) > 0 {
		refused = true
	}
	return FormatMigration(mg, notes, ignore), refused, nil
}

// FormatMigration is EXPLAIN MIGRATION's text: per stateful operator its
// identity, verdict and plan node, then the overall result.
func FormatMigration(mg *checkpoint.Migration, notes []string, ignoreUnclaimed bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "== Migration from %s ==\n", mg.Snapshot)
	if mg.Positional {
		b.WriteString("(the snapshot predates operator identities: its operators are mapped by their position in the same plan)\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATOR\tKIND\tVERDICT")
	for _, v := range mg.Operators {
		id := v.ID
		if id == "" {
			id = v.From
		}
		kind := v.Kind
		if kind == "" {
			kind = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", id, kind, v.Line())
	}
	tw.Flush()
	b.WriteString("\n")
	for _, v := range mg.Operators {
		id := v.ID
		if id == "" {
			id = v.From
		}
		if v.Name != "" {
			fmt.Fprintf(&b, "%s: %s\n", id, v.Name)
		}
	}
	b.WriteString("\nResult: ")
	result := mg.Result()
	if ignoreUnclaimed && mg.Count(checkpoint.VerdictIncompatible) == 0 && mg.Count(checkpoint.VerdictDropped) > 0 {
		result = fmt.Sprintf("compatible with '%s' = 'true': the state of %d operator(s) is not restored", options.IgnoreUnclaimedState.Key, mg.Count(checkpoint.VerdictDropped))
	}
	if len(notes) > 0 {
		result = strings.Join(notes, "; ")
	}
	b.WriteString(result + "\n")
	return b.String()
}

// loadSnapshot reads the _metadata at path as execution.state-recovery.path
// would.
func loadSnapshot(ctx context.Context, conf *options.Values, path string) (*checkpoint.Metadata, error) {
	p := strings.TrimSpace(path)
	opts := map[string]string{}
	for k, v := range conf.WithPrefix("s3.") {
		opts[k] = v
	}
	if !strings.Contains(p, "://") && !filepath.IsAbs(p) {
		dir := strings.TrimSpace(options.CheckpointsDir.Get(conf))
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "flinksql-checkpoints")
		}
		p = strings.TrimRight(dir, "/") + "/" + p
	}
	md, err := checkpoint.Load(ctx, p, opts)
	if err != nil {
		return nil, fmt.Errorf("EXPLAIN MIGRATION: %w", err)
	}
	return md, nil
}
