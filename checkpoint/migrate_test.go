package checkpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
)

// TestWidens: only the numeric widenings whose values are stored and
// hashed alike, and nullability relaxed, never tightened.
func TestWidens(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"INT", "BIGINT", true}, {"TINYINT", "INT", true}, {"SMALLINT", "BIGINT", true}, {"FLOAT", "DOUBLE", true},
		{"INT NOT NULL", "BIGINT", true}, {"INT NOT NULL", "INT", true},
		{"BIGINT", "INT", false}, {"INT", "DOUBLE", false}, {"DOUBLE", "FLOAT", false}, {"INT", "STRING", false},
		{"INT", "BIGINT NOT NULL", false}, {"DECIMAL(10, 2)", "DECIMAL(12, 2)", false},
	} {
		if got := Widens(c.from, c.to); got != c.want {
			t.Errorf("Widens(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// TestPlanMigrationVerdicts: the mapping and refusals of a snapshot with
// identities: a kept operator maps to itself, a new one gets nothing, a
// dropped one is refused unless ignored, an incompatible one always.
func TestPlanMigrationVerdicts(t *testing.T) {
	key := []exec.StateField{{Name: "k", Type: "INT"}}
	md := &Metadata{ID: 3, Operators: []*exec.OperatorState{
		{ID: "Source-1-source", Kind: "Source"},
		{ID: "GroupAggregate-a", Kind: "GroupAggregate", Keys: key},
		{ID: "GroupAggregate-b", Kind: "GroupAggregate", Keys: key},
	}, Instances: []Instance{{Operator: "Source-1-source"}, {Operator: "GroupAggregate-a"}, {Operator: "GroupAggregate-b"}}}
	ops := []*exec.OperatorState{
		{ID: "Source-1-source", Kind: "Source"},
		{ID: "GroupAggregate-a", Kind: "GroupAggregate", Keys: key},
		{ID: "Sink-c", Kind: "Sink"},
	}
	mg, err := PlanMigration(md, ops, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range mg.Operators {
		got = append(got, v.ID+v.From+" "+v.Line())
	}
	want := []string{"Source-1-sourceSource-1-source kept", "GroupAggregate-aGroupAggregate-a kept", "Sink-c new (starts empty)", "GroupAggregate-b dropped (state not restored)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdicts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(mg.Mapping) != 2 || mg.Mapping["GroupAggregate-a"] != "GroupAggregate-a" || mg.Mapping["GroupAggregate-b"] != "" {
		t.Errorf("mapping %v", mg.Mapping)
	}
	if err := mg.Check(false); !errors.Is(err, ErrUnclaimedState) || !strings.Contains(err.Error(), "Cannot map checkpoint/savepoint state for operator GroupAggregate-b") {
		t.Errorf("dropped, not ignored: %v", err)
	}
	if err := mg.Check(true); err != nil {
		t.Errorf("dropped, ignored: %v", err)
	}
	ops[1].Keys = []exec.StateField{{Name: "k", Type: "STRING"}}
	if mg, err = PlanMigration(md, ops, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := mg.Check(true); !errors.Is(err, ErrIncompatibleRestore) || !strings.Contains(err.Error(), "key k has type INT in the snapshot and STRING in the job") {
		t.Errorf("incompatible, ignored: %v", err)
	}
}
