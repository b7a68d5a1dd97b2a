package plan

import (
	"sort"
	"strings"
	"time"

	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/units"
)

// stateTTLHints are the STATE_TTL query hints of the SELECT being planned
// (SELECT /*+ STATE_TTL('o' = '1d', 'c' = '12h') */ …): the retention of
// the rows of each named join input, by table name or alias, replacing
// table.exec.state.ttl for that side.
type stateTTLHints struct {
	ttl  map[string]time.Duration
	used map[string]bool
}

// queryHints reads the query hints of s. STATE_TTL is implemented for
// regular joins; other query hints are refused, never ignored.
func queryHints(s *parser.Select) (*stateTTLHints, error) {
	if len(s.Hints) == 0 {
		return nil, nil
	}
	h := &stateTTLHints{ttl: map[string]time.Duration{}, used: map[string]bool{}}
	for _, hint := range s.Hints {
		if hint.Name == "LOOKUP" {
			continue // lookup joins' (temporal.go)
		}
		if hint.Name != "STATE_TTL" {
			return nil, unsupportedQueryHint(hint)
		}
		if len(hint.Args) > 0 || len(hint.Options) == 0 {
			return nil, errAt(hint, "Invalid STATE_TTL hint: it takes key-value options, the table name or alias of a join input and its state TTL, e.g. STATE_TTL('orders' = '1d')")
		}
		for _, o := range hint.Options {
			d, err := units.ParseDuration(o.Value)
			if err != nil || d < 0 {
				return nil, errAt(hint, "Invalid STATE_TTL value '%s' for '%s': a duration such as '1d', '12 h' or '30 min' is expected", o.Value, o.Key)
			}
			if _, dup := h.ttl[o.Key]; !dup {
				h.ttl[o.Key] = d // the first of repeated keys wins, as in Flink
			}
		}
	}
	return h, nil
}

// sideTTL returns the TTL of a join input: its STATE_TTL hint when the
// input is one table or alias the hint names, else def.
func (h *stateTTLHints) sideTTL(rel *relation, def time.Duration) time.Duration {
	if h == nil || len(rel.scope.cols) == 0 {
		return def
	}
	q := rel.scope.cols[0].Qualifier
	for _, c := range rel.scope.cols {
		if c.Qualifier != q {
			return def
		}
	}
	if d, ok := h.ttl[q]; ok && q != "" {
		h.used[q] = true
		return d
	}
	return def
}

// checkUsed fails when a hinted name is no join input of the SELECT.
func (h *stateTTLHints) checkUsed(s *parser.Select) error {
	if h == nil {
		return nil
	}
	var unused []string
	for k := range h.ttl {
		if !h.used[k] {
			unused = append(unused, "`"+k+"`")
		}
	}
	if len(unused) == 0 {
		return nil
	}
	if _, isJoin := s.From.(*parser.Join); !isJoin && (len(s.GroupBy) > 0 || hasAggregate(s)) {
		return unsupportedAt(s.Hints[0], "the STATE_TTL hint on an aggregation is not supported yet; it is supported on regular joins")
	}
	sort.Strings(unused)
	return errAt(s.Hints[0], "The options of following hints cannot match the name of input tables or views: \n%s in STATE_TTL", strings.Join(unused, ", "))
}

// unsupportedQueryHint refuses a query hint that is neither STATE_TTL nor
// LOOKUP.
func unsupportedQueryHint(h *parser.Hint) error {
	return unsupportedAt(h, "the query hint %s is not supported yet; the supported query hints are STATE_TTL('table' = 'ttl', ...) on regular joins and LOOKUP('table' = '...', ...) on lookup joins", h.Name)
}
