package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
)

// OperatorState describes what determines one operator's state, as the
// planner derives it: its stable identity and its state schema. The
// identity (ID) keys the operator's state in checkpoints and savepoints, so
// that an edit of the query that does not touch the operator (a projection
// column, a filter, another sink) finds its state again; the schema is
// recorded with the checkpoint and compared by a restore into an edited
// query (package checkpoint, Migrate).
type OperatorState struct {
	// ID is a hash of Kind, Table, the key column names, Params and (but
	// for sinks) Upstream, prefixed for people
	// ("WindowAggregate-3fa9c0d1e2b4"); a source's ends in "-source".
	ID string `json:"id"`
	// Kind is the operator kind: Source, Sink, GroupAggregate,
	// WindowAggregate, or the plan node's name.
	Kind string `json:"kind"`
	// Name is the plan node's EXPLAIN line, for people.
	Name string `json:"name,omitempty"`
	// Table is the source or sink table.
	Table string `json:"table,omitempty"`
	// Keys are the key columns the state is partitioned by.
	Keys []StateField `json:"keys,omitempty"`
	// Aggs are an aggregation's accumulators, in layout order; AccWidth is
	// the number of values of the whole accumulator (slot 0 is the shared
	// row count).
	Aggs     []StateAgg `json:"aggs,omitempty"`
	AccWidth int        `json:"accWidth,omitempty"`
	// Rows are the columns of the rows the operator stores (its input).
	Rows []StateField `json:"rows,omitempty"`
	// Params is what else decides what the state means (a window's
	// definition; for operators without a schema of their own, the whole
	// plan node).
	Params string `json:"params,omitempty"`
	// Upstream are the identities of the nearest stateful operators and
	// sources it reads from: its position relative to the sources.
	Upstream []string `json:"upstream,omitempty"`
	// States are the keyed states the operator declares (DescribeStates).
	States []kv.Declaration `json:"states,omitempty"`
	// Keyed: the state is keyed state (kv); otherwise operator state
	// (source positions, sink committables).
	Keyed bool `json:"keyed,omitempty"`

	// Migrate, set by the planner for operators whose stored values it can
	// convert, returns for an older schema of the same operator the
	// conversion of each affected state's stored values (by state name).
	Migrate func(old *OperatorState) (map[string]ValueRewrite, error) `json:"-"`
}

// StateField is a column of a state schema.
type StateField struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// StateAgg is one aggregate call's accumulator in an aggregation's state.
type StateAgg struct {
	// Call is the call as EXPLAIN writes it, e.g. SUM(amount): what the
	// accumulator accumulates.
	Call     string   `json:"call"`
	ArgTypes []string `json:"argTypes,omitempty"`
	Result   string   `json:"result"`
	// Offset and Width are the accumulator's slots.
	Offset int `json:"offset"`
	Width  int `json:"width"`
}

// ValueRewrite converts one stored value of a state (without its TTL
// stamp) to the layout of the restoring job. It may return src's memory.
type ValueRewrite func(src []byte) ([]byte, error)

// DescribeStates returns the state of every operator of g that has state,
// in graph order: sources (their positions), keyed operators (with the
// states they declare, found by opening each on an empty hashmap backend
// under tmp) and checkpointed operators such as exactly-once sinks.
// Operators without an OperatorState are left out.
func DescribeStates(g *JobGraph, tmp string) ([]*OperatorState, error) {
	var out []*OperatorState
	for _, v := range g.Vertices {
		if v.Source != nil && v.SourceState != nil {
			out = append(out, v.SourceState)
		}
		for i, f := range v.Chain {
			if i >= len(v.States) || v.States[i] == nil {
				continue
			}
			op, err := f()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.ChainNames[i], err)
			}
			st := v.States[i]
			switch o := op.(type) {
			case KeyedOperator:
				decls, err := declaredStates(o, tmp)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", v.ChainNames[i], err)
				}
				st.Keyed, st.States = true, decls
			case CheckpointedOperator:
			default:
				continue
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// declaredStates opens op's keyed state on an empty backend and lists
// what it declares.
func declaredStates(op KeyedOperator, tmp string) ([]kv.Declaration, error) {
	dir, err := os.MkdirTemp(tmp, "flinksql-describe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b, err := kv.Open(kv.Config{Kind: image.Hashmap, Dir: filepath.Join(dir, "db")})
	if err != nil {
		return nil, err
	}
	err = op.OpenKeyedState(b)
	decls := b.Declarations()
	// The operator was never opened, so it is not closed either.
	return decls, errors.Join(err, b.Close())
}
