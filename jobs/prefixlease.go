package jobs

import (
	"context"
	"fmt"
	"os"

	"github.com/flinksql/flinksql/plan"
)

// prefixLeaser is a sink whose transactional-id prefix no job of another
// session or process may use at the same time (an exactly-once Kafka
// sink): it holds a lease on the prefix in the cluster it writes to.
type prefixLeaser interface {
	AcquirePrefixLease(ctx context.Context, owner string, logf func(format string, args ...any)) (release func(), err error)
}

// acquirePrefixLeases takes the prefix leases of the job's sinks before
// the job starts; release gives them back when the job has ended. The
// running jobs of this session were checked by validateSinks.
func (s *Supervisor) acquirePrefixLeases(ctx context.Context, plan *plan.Plan, job string) (release func(), err error) {
	host, _ := os.Hostname()
	owner := fmt.Sprintf("job '%s' of flinksql", job)
	if host != "" {
		owner = fmt.Sprintf("job '%s' of flinksql on %s", job, host)
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(s.cfg.Stderr, "[INFO] "+format+"\n", args...)
	}
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for _, sink := range plan.Sinks {
		l, ok := sink.Sink.(prefixLeaser)
		if !ok {
			continue
		}
		r, err := l.AcquirePrefixLease(ctx, owner, logf)
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, r)
	}
	return release, nil
}
