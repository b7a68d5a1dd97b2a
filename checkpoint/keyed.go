package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
)

// KeyedFormat is Instance.Format of the state of a keyed operator instance:
// the image of its state/kv backend.
const KeyedFormat = "kv/1"

// OpenKeyedInstance implements exec.KeyedCheckpointStore: the backend is
// opened in a working directory of its own under the store's local
// directory, from the restored checkpoint's files when it holds the
// instance.
func (rs *runtimeStore) OpenKeyedInstance(op exec.OperatorID, subtask, parallelism int, cfg kv.Config) (exec.KeyedInstance, error) {
	if rs.viaEntries(op, parallelism) {
		return rs.openKeyedFromEntries(op, subtask, parallelism, cfg)
	}
	in, err := rs.restoredInstance(op, subtask, parallelism)
	if err != nil {
		return nil, err
	}
	if in != nil && len(in.Files) > 0 && in.Format != KeyedFormat {
		what := fmt.Sprintf("in the format %q", in.Format)
		if in.Format == "" {
			what = "as entries of its own (the format of flinksql releases before keyed state)"
		}
		return nil, fmt.Errorf("restoring operator %s subtask %d from checkpoint %d: the checkpoint holds the operator's state %s, which this release does not read into keyed state (format %q); start the job afresh (without 'execution.state-recovery.path', or with another 'pipeline.name'): %w",
			op, subtask, rs.restore.ID, what, KeyedFormat, ErrIncompatibleRestore)
	}
	if err := os.MkdirAll(rs.localDir, 0o755); err != nil {
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	dir, err := os.MkdirTemp(rs.localDir, dirElement(string(op))+"-"+strconv.Itoa(subtask)+"-")
	if err != nil {
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	cfg.Kind = rs.kind
	cfg.Dir = filepath.Join(dir, "db")
	cfg.FullFirstSnapshot = rs.noClaim
	ki := &keyedInstance{rs: rs, op: op, subtask: subtask, parallelism: parallelism, dir: dir}
	if in == nil || len(in.Files) == 0 {
		ki.b, err = kv.Open(cfg)
	} else {
		var files []image.File
		var deferred []deferredSum
		if err = os.MkdirAll(cfg.Dir, 0o755); err == nil {
			files, err = rs.downloadDeferring(context.Background(), in, cfg.Dir, &deferred)
		}
		if err == nil {
			cfg.SumsVerified = true // download compared them
			if ki.b, err = kv.Restore(cfg, files); err != nil {
				err = fmt.Errorf("restoring from checkpoint %d: %w: %w", rs.restore.ID, err, exec.ErrCheckpointUnrestorable)
			}
		}
		ki.restored = err == nil
		if err == nil && len(deferred) > 0 {
			ki.verifyInBackground(rs.restore.ID, deferred)
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	return ki, nil
}

// restoredInstance returns the restored checkpoint's part for the instance
// (nil on a fresh start or when the checkpoint has none), refusing another
// parallelism or state backend.
func (rs *runtimeStore) restoredInstance(op exec.OperatorID, subtask, parallelism int) (*Instance, error) {
	if rs.restore == nil {
		return nil, nil
	}
	if p, ok := rs.restoredParallelism[string(op)]; ok && p != parallelism {
		return nil, fmt.Errorf("restoring operator %s from checkpoint %d: the checkpoint has parallelism %d, the job %d; changing the parallelism of a job restored from a checkpoint is not supported: %w",
			op, rs.restore.ID, p, parallelism, ErrIncompatibleRestore)
	}
	in := rs.restored[instanceKey{string(op), subtask}]
	if in != nil && in.StateKind != string(rs.kind) {
		return nil, fmt.Errorf("restoring operator %s subtask %d from checkpoint %d: the checkpoint was taken with state backend %q, the job uses %q, which cannot read it; set 'state.backend.type' = '%s' to restore it: %w",
			op, subtask, rs.restore.ID, in.StateKind, rs.kind, in.StateKind, ErrIncompatibleRestore)
	}
	return in, nil
}

// keyedInstance is the backend of one keyed operator instance.
type keyedInstance struct {
	rs          *runtimeStore
	op          exec.OperatorID
	subtask     int
	parallelism int
	dir         string
	b           *kv.Backend
	restored    bool
	// verified is closed when the checksums of the restored files that
	// were hard-linked (not read) have been compared; verifyErr is then
	// set when one differs. nil when nothing was deferred.
	verified  chan struct{}
	verifyErr error
	stop      chan struct{} // closed by Close: the verification gives up
}

// verifyInBackground compares the deferred checksums on a goroutine the
// instance owns (Close waits for it). The job runs meanwhile; no
// checkpoint of this instance completes before the comparison did (Persist
// waits for it), so no output is committed from state that turns out
// damaged, and a mismatch fails the job at its next checkpoint (Seal) with
// exec.ErrCheckpointUnrestorable. Reads of a damaged block fail earlier
// still: Pebble checks the checksum of every block it reads.
func (ki *keyedInstance) verifyInBackground(id int64, files []deferredSum) {
	ki.verified = make(chan struct{})
	ki.stop = make(chan struct{})
	go func() {
		defer close(ki.verified)
		for _, f := range files {
			select {
			case <-ki.stop:
				ki.verifyErr = fmt.Errorf("restoring from checkpoint %d: the verification of %s was stopped", id, f.from)
				return
			default:
			}
			if err := checkFile(f.path, f.from, f.size, f.sum); err != nil {
				ki.verifyErr = fmt.Errorf("restoring from checkpoint %d: %w: %w", id, err, exec.ErrCheckpointUnrestorable)
				return
			}
		}
	}()
}

// verification returns the result of the deferred checksum comparison:
// done false while it runs.
func (ki *keyedInstance) verification() (done bool, err error) {
	if ki.verified == nil {
		return true, nil
	}
	select {
	case <-ki.verified:
		return true, ki.verifyErr
	default:
		return false, nil
	}
}

func (ki *keyedInstance) Backend() *kv.Backend { return ki.b }
func (ki *keyedInstance) Restored() bool       { return ki.restored }

func (ki *keyedInstance) Seal(id exec.CheckpointID) (exec.SealedState, error) {
	if done, err := ki.verification(); done && err != nil {
		return nil, fmt.Errorf("state of %s subtask %d: %w", ki.op, ki.subtask, err)
	}
	start := time.Now()
	img, err := ki.b.Snapshot(int64(id))
	if err != nil {
		return nil, fmt.Errorf("sealing state of %s subtask %d for checkpoint %d: %w", ki.op, ki.subtask, id, err)
	}
	return &sealedState{
		m:           ki.rs.m,
		id:          int64(id),
		op:          ki.op,
		subtask:     ki.subtask,
		parallelism: ki.parallelism,
		img:         img,
		sync:        time.Since(start),
		format:      KeyedFormat,
		verified:    ki.verification,
		wait:        ki.verified,
	}, nil
}

func (ki *keyedInstance) Close() error {
	if ki.stop != nil {
		close(ki.stop)
		<-ki.verified
	}
	err := ki.b.Close()
	if rerr := os.RemoveAll(ki.dir); err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("closing state of %s subtask %d: %w", ki.op, ki.subtask, err)
	}
	return nil
}
