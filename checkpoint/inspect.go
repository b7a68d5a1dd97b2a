package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Jobs returns the names of the jobs under st that have at least one
// completed checkpoint, sorted. It only reads.
func Jobs(ctx context.Context, st Storage) ([]string, error) {
	objs, err := st.List(ctx, "")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var jobs []string
	for _, o := range objs {
		parts := strings.Split(o, "/")
		if len(parts) != 3 || parts[2] != MetadataName || seen[parts[0]] {
			continue
		}
		if _, ok := parseChkDir(parts[1]); ok {
			seen[parts[0]] = true
			jobs = append(jobs, parts[0])
		}
	}
	sort.Strings(jobs)
	return jobs, nil
}

// ListCheckpoints returns the completed checkpoints of job in st, oldest
// first. Unlike NewManager it changes nothing: incomplete checkpoints are
// skipped, not removed.
func ListCheckpoints(ctx context.Context, st Storage, job string) ([]*Metadata, error) {
	if err := validJobName(job); err != nil {
		return nil, err
	}
	scan, err := scanJob(ctx, st, job)
	if err != nil {
		return nil, fmt.Errorf("listing checkpoints of job %q: %w", job, err)
	}
	// A corrupt checkpoint is what an inspection is for: report it.
	var errs []error
	for id, err := range scan.corrupt {
		errs = append(errs, fmt.Errorf("checkpoint %d of job %q: %w", id, job, err))
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return scan.completed, errors.Join(errs...)
	}
	return scan.completed, nil
}

// Verify checks that every file md references exists where md was read from,
// with the recorded size and SHA-256. It returns one line per problem;
// the error is for storage failures that stop the check. Files already
// checked (shared files of several checkpoints) are looked up in checked,
// which may be nil.
func Verify(ctx context.Context, md *Metadata, checked map[string]string) ([]string, error) {
	if md.src == nil {
		return nil, fmt.Errorf("checkpoint %d was not read from storage", md.ID)
	}
	var problems []string
	for _, in := range md.Instances {
		for _, f := range in.Files {
			p := md.base + f.Path
			problem, ok := checked[p]
			if !ok {
				var err error
				if problem, err = verifyFile(ctx, md.src, p, f.Size, f.SHA256); err != nil {
					return problems, err
				}
				if checked != nil {
					checked[p] = problem
				}
			}
			if problem != "" {
				problems = append(problems, fmt.Sprintf("chk-%d: %s (operator %s subtask %d): %s", md.ID, p, in.Operator, in.Subtask, problem))
			}
		}
	}
	return problems, nil
}

func verifyFile(ctx context.Context, st Storage, p string, size int64, sum string) (string, error) {
	n, ok, err := st.Stat(ctx, p)
	if err != nil {
		return "", err
	}
	if !ok {
		return "missing", nil
	}
	if n != size {
		return fmt.Sprintf("size %d, expected %d", n, size), nil
	}
	r, err := st.Get(ctx, p)
	if err != nil {
		if isNotExist(err) {
			return "missing", nil
		}
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("reading %s: %w", p, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, sum) {
		return fmt.Sprintf("sha256 %s, expected %s", got, sum), nil
	}
	return "", nil
}

// ListSavepoints returns the savepoints in the directory at uri (a
// state.savepoints.dir), sorted by time: every <name>/_metadata of type
// savepoint directly below it. It only reads.
func ListSavepoints(ctx context.Context, uri string, opts map[string]string) ([]*Metadata, error) {
	st, err := OpenStorage(ctx, strings.TrimRight(uri, "/"), opts)
	if err != nil {
		return nil, err
	}
	objs, err := st.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []*Metadata
	for _, o := range objs {
		parts := strings.Split(o, "/")
		if len(parts) != 2 || parts[1] != MetadataName {
			continue
		}
		md, err := readMetadata(ctx, st, "", o)
		if err != nil {
			return out, err
		}
		if md.Type == TypeSavepoint {
			out = append(out, md)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	return out, nil
}
