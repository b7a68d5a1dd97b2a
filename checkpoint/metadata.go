package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
)

// MetadataVersion is the version of the _metadata format this package
// writes; it reads only this version.
const MetadataVersion = 1

// MetadataName is the name of the object that makes a chk-<n> directory a
// checkpoint.
const MetadataName = "_metadata"

const (
	sharedDir = "shared"
	chkPrefix = "chk-"
)

// Metadata describes one completed checkpoint. It is stored as JSON in
// <job>/chk-<id>/_metadata.
type Metadata struct {
	Version   int       `json:"version"`
	Job       string    `json:"job"`
	ID        int64     `json:"id"`
	Timestamp time.Time `json:"timestamp"`
	// FullBytes is the size of all state the checkpoint references;
	// UploadedBytes what this checkpoint uploaded (the rest is reused).
	FullBytes     int64 `json:"fullBytes"`
	UploadedBytes int64 `json:"uploadedBytes"`
	// SyncDuration and AsyncDuration are the longest synchronous and
	// asynchronous parts among the instances, in nanoseconds.
	SyncDuration  time.Duration `json:"syncNanos"`
	AsyncDuration time.Duration `json:"asyncNanos"`
	Instances     []Instance    `json:"instances"`
	// Plan fingerprints the job's plan. A named job resumes its latest
	// checkpoint only with the same plan, and a snapshot without Operators
	// (operator ids were plan positions) restores only into the same plan.
	Plan string `json:"plan,omitempty"`
	// MaxParallelism is the job's pipeline.max-parallelism, the number of key
	// groups its keyed state is split into: a job with another number would
	// look its keys up in the wrong key groups, so it cannot restore this
	// checkpoint. Zero in checkpoints of builds that did not record it.
	MaxParallelism int `json:"maxParallelism,omitempty"`

	// Type is TypeSavepoint for a savepoint (empty for a checkpoint).
	Type string `json:"type,omitempty"`
	// SavepointFormat is the version of a savepoint's layout
	// (SavepointFormatVersion when written): a release reads the versions
	// it knows, so a savepoint outlives the release that took it.
	SavepointFormat int `json:"savepointFormat,omitempty"`
	// StateBackend is the state backend of the job that took the snapshot
	// (savepoints only: their state is readable by either backend).
	StateBackend string `json:"stateBackend,omitempty"`
	// SQL holds the statements of the job that took the savepoint.
	SQL []string `json:"sql,omitempty"`
	// FromCheckpoint is the checkpoint the savepoint was made of
	// ("<job>/chk-<n>").
	FromCheckpoint string `json:"fromCheckpoint,omitempty"`
	// Operators describe the stateful operators of the job that took the
	// snapshot: the identity each instance's Operator names and its state
	// schema, which a restore into an edited query compares (Migrate).
	// Empty in snapshots of builds whose operator ids were plan positions
	// ("v1-0"): those restore only into the same plan. Older builds ignore
	// the field, so the format version stays.
	Operators []*exec.OperatorState `json:"operators,omitempty"`
	// Script is the whole job script of a savepoint: the DDL and SET
	// statements the job was planned with, then its INSERT (or statement
	// set), enough to plan it again.
	Script []string `json:"script,omitempty"`

	// Where the checkpoint was read from: files resolve to src at base+Path.
	src  Storage
	base string
}

// Instance is one operator instance's part of a checkpoint.
type Instance struct {
	Operator    string `json:"operator"`
	Subtask     int    `json:"subtask"`
	Parallelism int    `json:"parallelism"`
	StateKind   string `json:"stateKind"`
	// Format is the layout of the state files: KeyedFormat for the
	// runtime-owned keyed state of package state/kv, empty for the entry
	// stores of package state.
	Format string `json:"format,omitempty"`
	// KeyGroups is the key-group range of the keyed state, as the state
	// backend reported it, so that a savepoint can later split it.
	KeyGroups     [2]int        `json:"keyGroups"`
	Position      []byte        `json:"position,omitempty"` // source reader position, base64 in JSON
	FullBytes     int64         `json:"fullBytes"`
	UploadedBytes int64         `json:"uploadedBytes"`
	SyncDuration  time.Duration `json:"syncNanos"`
	AsyncDuration time.Duration `json:"asyncNanos"`
	Files         []FileRef     `json:"files"`
	// The size of a keyed instance's state when it was sealed, as its
	// backend reported it (kv.Backend.Size): entries (estimated from the
	// SST statistics for rocksdb: EntriesEstimated), bytes in memory and
	// bytes of the working DB on local disk. Recorded for Format
	// KeyedFormat only.
	StateEntries     int64 `json:"stateEntries,omitempty"`
	EntriesEstimated bool  `json:"entriesEstimated,omitempty"`
	MemoryBytes      int64 `json:"memoryBytes,omitempty"`
	DiskBytes        int64 `json:"diskBytes,omitempty"`
	// Name describes the operator (its node in the job graph), and States
	// are a keyed instance's declared states: for inspection only (the
	// restore maps instances by Operator).
	Name   string           `json:"name,omitempty"`
	States []kv.Declaration `json:"states,omitempty"`
}

// StateSize sums the state sizes of the instances of one operator in a
// checkpoint.
type StateSize struct {
	Operator    string
	Subtasks    int
	StateKind   string
	Keyed       bool // the instances are keyed state (sizes recorded)
	Entries     int64
	Estimated   bool // some entry count is an estimate
	MemoryBytes int64
	DiskBytes   int64
	FullBytes   int64
}

// StateSizes returns the state size per operator, in operator order.
func (m *Metadata) StateSizes() []StateSize {
	var out []StateSize
	at := map[string]int{}
	for _, in := range m.Instances {
		i, ok := at[in.Operator]
		if !ok {
			i = len(out)
			at[in.Operator] = i
			out = append(out, StateSize{Operator: in.Operator, StateKind: in.StateKind})
		}
		s := &out[i]
		s.Subtasks++
		s.FullBytes += in.FullBytes
		if in.Format == KeyedFormat {
			s.Keyed = true
			s.Entries += in.StateEntries
			s.Estimated = s.Estimated || in.EntriesEstimated
			s.MemoryBytes += in.MemoryBytes
			s.DiskBytes += in.DiskBytes
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return operatorLess(out[i].Operator, out[j].Operator) })
	return out
}

// operatorLess orders operator ids "v<vertex>-<index>" (and a vertex's
// "v<vertex>-source" first) numerically, others by name after them.
func operatorLess(a, b string) bool {
	va, ia, oka := parseOperatorID(a)
	vb, ib, okb := parseOperatorID(b)
	switch {
	case oka && okb:
		if va != vb {
			return va < vb
		}
		return ia < ib
	case oka != okb:
		return oka
	}
	return a < b
}

func parseOperatorID(s string) (vertex, index int, ok bool) {
	v, i, found := strings.Cut(strings.TrimPrefix(s, "v"), "-")
	if !found || !strings.HasPrefix(s, "v") {
		return 0, 0, false
	}
	var err1, err2 error
	vertex, err1 = strconv.Atoi(v)
	if i == "source" {
		index = -1
	} else {
		index, err2 = strconv.Atoi(i)
	}
	return vertex, index, err1 == nil && err2 == nil
}

// FileRef is a file of an instance's state in storage.
type FileRef struct {
	// Path is relative to the job directory: shared/<name> or chk-<id>/<name>.
	Path      string `json:"path"`
	Name      string `json:"name"`      // the state backend's unique name
	LocalName string `json:"localName"` // the name inside the restored state directory
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Shared    bool   `json:"shared"`
}

// Location is where the checkpoint or savepoint lies: the URI of its
// directory ("" when unknown).
func (m *Metadata) Location() string {
	ls, ok := m.src.(locatedStorage)
	if !ok {
		return ""
	}
	uri, _ := ls.location()
	dir := m.base + m.Dir()
	if m.Type == TypeSavepoint {
		dir = strings.TrimSuffix(m.base, "/")
	}
	return strings.TrimRight(uri, "/") + "/" + dir
}

// Dir is the checkpoint's directory relative to the job directory.
func (m *Metadata) Dir() string { return chkDir(m.ID) }

// SharedFiles and PrivateFiles count the files the checkpoint references.
func (m *Metadata) SharedFiles() int  { return m.countFiles(true) }
func (m *Metadata) PrivateFiles() int { return m.countFiles(false) }

func (m *Metadata) countFiles(shared bool) int {
	n := 0
	for _, in := range m.Instances {
		for _, f := range in.Files {
			if f.Shared == shared {
				n++
			}
		}
	}
	return n
}

func chkDir(id int64) string { return chkPrefix + strconv.FormatInt(id, 10) }

var chkDirRE = regexp.MustCompile(`^chk-([0-9]+)$`)

// parseChkDir returns n for "chk-<n>".
func parseChkDir(name string) (int64, bool) {
	m := chkDirRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	return id, err == nil && id > 0
}

func encodeMetadata(m *Metadata) ([]byte, error) {
	sort.Slice(m.Instances, func(i, j int) bool {
		a, b := m.Instances[i], m.Instances[j]
		if a.Operator != b.Operator {
			return a.Operator < b.Operator
		}
		return a.Subtask < b.Subtask
	})
	return json.MarshalIndent(m, "", "  ")
}

// errCorruptMetadata marks a _metadata object that was read but is not a
// checkpoint's metadata (truncated, overwritten, or naming invalid paths):
// recovery skips such a checkpoint for an older one instead of refusing to
// start. A storage failure or a newer format version is not corruption.
var errCorruptMetadata = errors.New("the checkpoint metadata is corrupt")

// readMetadata reads and checks <base><chk-dir>/_metadata from st.
func readMetadata(ctx context.Context, st Storage, base, path string) (*Metadata, error) {
	r, err := st.Get(ctx, base+path)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint metadata: %w", err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint metadata %s: %w", base+path, err)
	}
	var m Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("checkpoint metadata %s is not valid: %w (starts with %q): %w", base+path, err, prefix(data, 32), errCorruptMetadata)
	}
	if m.Version != MetadataVersion {
		return nil, fmt.Errorf("checkpoint metadata %s has version %d; this build reads version %d", base+path, m.Version, MetadataVersion)
	}
	if m.ID <= 0 {
		return nil, fmt.Errorf("checkpoint metadata %s: invalid checkpoint id %d: %w", base+path, m.ID, errCorruptMetadata)
	}
	for _, in := range m.Instances {
		for _, f := range in.Files {
			if err := validPath(f.Path); err != nil {
				return nil, fmt.Errorf("checkpoint metadata %s: operator %s subtask %d: %w: %w", base+path, in.Operator, in.Subtask, err, errCorruptMetadata)
			}
		}
	}
	if m.Type == TypeSavepoint {
		if m.SavepointFormat < 1 || m.SavepointFormat > SavepointFormatVersion {
			return nil, fmt.Errorf("savepoint metadata %s has savepoint format %d; this build reads formats 1 to %d", base+path, m.SavepointFormat, SavepointFormatVersion)
		}
		// A savepoint's files lie in its own directory, wherever it was
		// moved: they are named relative to it.
		if i := strings.LastIndex(path, "/"); i >= 0 {
			base += path[:i+1]
		}
	} else if m.Type != "" {
		return nil, fmt.Errorf("metadata %s is of type %q, neither a checkpoint nor a savepoint: %w", base+path, m.Type, errCorruptMetadata)
	}
	m.src, m.base = st, base
	return &m, nil
}

func prefix(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
