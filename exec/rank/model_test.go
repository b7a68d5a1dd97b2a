package rank

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// TestTopNAgainstModel feeds random changelogs (small value ranges, so ties
// and duplicate rows are common) and checks after every row that the
// materialized output equals ranks RankStart…RankEnd of a stable sort of the
// rows alive in each partition, and that the output never retracts a row it
// did not emit.
func TestTopNAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 300; iter++ {
		spec := RankSpec{
			PartitionCols:        []int{0},
			SortKeys:             []exec.SortKey{{Col: 2, Desc: rng.Intn(2) == 0, NullsFirst: rng.Intn(2) == 0}},
			RankStart:            int64(1 + rng.Intn(3)),
			OutputRankNumber:     rng.Intn(2) == 0,
			InputIsUpdating:      rng.Intn(2) == 0,
			GenerateUpdateBefore: true,
		}
		spec.RankEnd = spec.RankStart + int64(rng.Intn(4))
		if err := checkAgainstModel(t, rng, spec); err != nil {
			t.Fatalf("spec %+v: %v", spec, err)
		}
	}
}

type modelRow struct {
	row types.Row
	seq int
}

// TestTopNAgainstModelEvicting is TestTopNAgainstModel on rocksdb with a
// write-back cache of a few values in the operator and a few bytes in the
// backend, so rows go through Pebble all the time, and with a checkpoint
// and a restore into a fresh operator at random steps.
func TestTopNAgainstModelEvicting(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for iter := 0; iter < 25; iter++ {
		spec := RankSpec{
			PartitionCols:        []int{0},
			SortKeys:             []exec.SortKey{{Col: 2, Desc: rng.Intn(2) == 0, NullsFirst: rng.Intn(2) == 0}},
			RankStart:            int64(1 + rng.Intn(3)),
			OutputRankNumber:     rng.Intn(2) == 0,
			InputIsUpdating:      rng.Intn(2) == 0,
			GenerateUpdateBefore: true,
		}
		spec.RankEnd = spec.RankStart + int64(rng.Intn(4))
		k := optest.NewKeyed(t, image.RocksDB)
		k.CacheBytes = 64
		if err := checkAgainstModelOn(t, rng, spec, k, 4); err != nil {
			t.Fatalf("spec %+v: %v", spec, err)
		}
	}
}

func checkAgainstModel(t *testing.T, rng *rand.Rand, spec RankSpec) error {
	return checkAgainstModelOn(t, rng, spec, nil, 0)
}

// checkAgainstModelOn runs the model check on k's backends (nil: the
// default hashmap), the operator's cache bounded to cached values (0: the
// backend's bound); with k, one step in eight ends with a checkpoint
// and a restore into a fresh operator.
func checkAgainstModelOn(t *testing.T, rng *rand.Rand, spec RankSpec, k *optest.Keyed, cached int) error {
	build := func() (exec.Operator, error) { return NewRank(spec) }
	if cached > 0 {
		build = withCache(build, cached)
	}
	op, err := build()
	if err != nil {
		return err
	}
	var be *kv.Backend
	if k == nil {
		open(t, op, &fakeRuntime{})
	} else {
		be = k.Open(t, op.(exec.KeyedOperator))
		if err := op.Open((&fakeRuntime{}).Context()); err != nil {
			return err
		}
	}
	checkpoint := exec.CheckpointID(0)
	live := map[string][]modelRow{} // partition → rows in arrival order
	var table mat
	table.init(spec.OutputRankNumber)
	out := &table
	b := types.NewBatch(3, 1)
	for step := 0; step < 60; step++ {
		part := fmt.Sprint("p", rng.Intn(2))
		b.Reset()
		rows := live[part]
		if spec.InputIsUpdating && len(rows) > 0 && rng.Intn(3) == 0 {
			i := rng.Intn(len(rows))
			kind := types.Delete
			if rng.Intn(2) == 0 {
				kind = types.UpdateBefore
			}
			b.AppendRow(kind, rows[i].row)
			// A retraction withdraws the earliest equal row, as Flink's
			// RetractableTopNFunction does; among equal rows that decides
			// the order of the rows left.
			first := slices.IndexFunc(rows, func(m modelRow) bool { return types.RowsEqual(m.row, rows[i].row) })
			live[part] = slices.Delete(rows, first, first+1)
		} else {
			r := types.Row{types.String(part), types.String(fmt.Sprint("x", rng.Intn(2))), types.Int(int64(rng.Intn(4)))}
			if rng.Intn(8) == 0 {
				r[2] = types.Value{}
			}
			kind := types.Insert
			if spec.InputIsUpdating && rng.Intn(2) == 0 {
				kind = types.UpdateAfter
			}
			b.AppendRow(kind, r)
			live[part] = append(rows, modelRow{row: r, seq: step})
		}
		if err := op.ProcessBatch(0, b, out); err != nil {
			return err
		}
		if table.err != nil {
			return fmt.Errorf("step %d: %v", step, table.err)
		}
		want := expectedTable(spec, live)
		if got := table.dump(); got != want {
			return fmt.Errorf("step %d: materialized output\n%s\nwant\n%s", step, got, want)
		}
		if k != nil && rng.Intn(8) == 0 {
			checkpoint++
			snap := k.Snapshot(t, op.(exec.KeyedOperator), be, checkpoint)
			if op, err = build(); err != nil {
				return err
			}
			be = k.Restore(t, op.(exec.KeyedOperator), snap)
			if err := op.Open((&fakeRuntime{}).Context()); err != nil {
				return err
			}
		}
		if k == nil && step%10 == 9 {
			stateSize(t, op) // the cache agrees with the backend and with its own count
		}
	}
	return nil
}

// expectedTable ranks the live rows of every partition by a stable sort.
func expectedTable(spec RankSpec, live map[string][]modelRow) string {
	var lines []string
	for _, rows := range live {
		sorted := slices.Clone(rows)
		slices.SortStableFunc(sorted, func(a, b modelRow) int { return exec.CompareRows(spec.SortKeys, a.row, b.row) })
		for i, r := range sorted {
			rn := int64(i + 1)
			if rn < spec.RankStart || rn > spec.RankEnd {
				continue
			}
			line := formatRow(r.row)
			if spec.OutputRankNumber {
				line += fmt.Sprintf(", %d", rn)
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// mat materializes a changelog: by rank position when rows carry rn, as a
// multiset otherwise.
type mat struct {
	withRank bool
	rows     map[string]int
	err      error
}

func (m *mat) init(withRank bool) { m.withRank, m.rows = withRank, map[string]int{} }

func (m *mat) Push(b *types.Batch) error {
	for i, r := range b.Rows {
		line := formatRow(r)
		switch b.Kinds[i] {
		case types.Insert, types.UpdateAfter:
			if m.withRank && b.Kinds[i] == types.Insert {
				pos := r[len(r)-1].N
				for k := range m.rows {
					if strings.HasSuffix(k, fmt.Sprintf(", %d", pos)) && strings.HasPrefix(k, r[0].S+",") {
						m.err = fmt.Errorf("+I(%s) into an occupied rank", line)
					}
				}
			}
			m.rows[line]++
		case types.UpdateBefore, types.Delete:
			if m.rows[line] == 0 {
				m.err = fmt.Errorf("%s(%s) of a row not emitted", b.Kinds[i], line)
				continue
			}
			m.rows[line]--
			if m.rows[line] == 0 {
				delete(m.rows, line)
			}
		}
	}
	return nil
}

func (m *mat) PushWatermark(int64) error { return nil }

func (m *mat) dump() string {
	var lines []string
	for k, n := range m.rows {
		for range n {
			lines = append(lines, k)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
