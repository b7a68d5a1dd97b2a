// Package options owns the session options flinksql reads: each declared
// once (key, type, default, description, deprecated keys, validation), a
// session's values checked when they are set and read through typed
// accessors, the listing behind `SET;`, and the option table of the docs.
//
// Table options (the WITH clause of CREATE TABLE) belong to their
// connectors and formats, not here.
package options

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/units"
)

// Spec is what every option declares, whatever the Go type of its value.
type Spec struct {
	Key string
	// Default is the value, as text, when the option is not set; empty
	// when the option has no default (unset means off or automatic, as the
	// description says).
	Default string
	// Type names the accepted values for the docs: Integer, Duration,
	// MemorySize, Boolean, Double, String, or an enumeration.
	Type        string
	Description string
	// Deprecated are older keys that set the same option.
	Deprecated []string
	check      func(string) error
}

// Check validates a value of the option, with the message Flink's
// configuration gives for a value it cannot parse.
func (s *Spec) Check(v string) error {
	if s.check == nil {
		return nil
	}
	if err := s.check(v); err != nil {
		return fmt.Errorf("Could not parse value '%s' for key '%s': %v.", v, s.Key, err) //nolint:staticcheck // Flink's text
	}
	return nil
}

// Option is a declared option whose values parse to T.
type Option[T any] struct {
	Spec
	parse func(string) (T, error)
}

// Get returns the option's value in vals: the value set, or the default.
// Values are validated when set, so Get does not fail.
func (o *Option[T]) Get(vals *Values) T {
	v, _ := o.parse(vals.raw(o.Key, o.Default))
	return v
}

// Lookup returns the option's value and whether it was set explicitly.
func (o *Option[T]) Lookup(vals *Values) (T, bool) {
	_, ok := vals.set[o.Key]
	return o.Get(vals), ok
}

// IsSet reports whether the option was set explicitly.
func (o *Option[T]) IsSet(vals *Values) bool {
	_, ok := vals.set[o.Key]
	return ok
}

func declare[T any](key, def, typ, desc string, parse func(string) (T, error), deprecated ...string) *Option[T] {
	o := &Option[T]{Spec: Spec{Key: key, Default: def, Type: typ, Description: desc, Deprecated: deprecated}, parse: parse}
	o.check = func(v string) error { _, err := parse(v); return err }
	return o
}

// Int declares an integer option of at least min.
func Int(key string, def, min int, desc string, deprecated ...string) *Option[int] {
	return declare(key, strconv.Itoa(def), "Integer", desc, func(v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min {
			return 0, fmt.Errorf("expected an integer >= %d", min)
		}
		return n, nil
	}, deprecated...)
}

// Duration declares a duration option (Flink's syntax: "10 s", "1min",
// "100 ms"); with an empty default, an empty value means unset and reads
// as 0.
func Duration(key, def, desc string, deprecated ...string) *Option[time.Duration] {
	return declare(key, def, "Duration", desc, func(v string) (time.Duration, error) {
		if strings.TrimSpace(v) == "" && def == "" {
			return 0, nil
		}
		return units.ParseDuration(v)
	}, deprecated...)
}

// Memory declares a memory-size option ("256 mb", "1gb", bytes when bare)
// of more than 0 bytes (the runtime reads 0 as unset); with an empty
// default, an empty value means unset and reads as 0.
func Memory(key, def, desc string, deprecated ...string) *Option[int64] {
	return declare(key, def, "MemorySize", desc, func(v string) (int64, error) {
		if strings.TrimSpace(v) == "" && def == "" {
			return 0, nil
		}
		n, err := units.ParseMemorySize(v)
		if err == nil && n == 0 {
			return 0, fmt.Errorf("the memory must be more than 0 bytes")
		}
		return n, err
	}, deprecated...)
}

// Bool declares a boolean option (true or false, any case).
func Bool(key string, def bool, desc string, deprecated ...string) *Option[bool] {
	return declare(key, strconv.FormatBool(def), "Boolean", desc, func(v string) (bool, error) {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("expected one of [true, false]")
	}, deprecated...)
}

// Enum declares an option taking one of allowed (any case); the value reads
// as the allowed spelling. With an empty default, an empty value means
// unset and reads as "".
func Enum(key, def string, allowed []string, desc string, deprecated ...string) *Option[string] {
	return declare(key, def, "Enum ["+strings.Join(allowed, ", ")+"]", desc, func(v string) (string, error) {
		t := strings.TrimSpace(v)
		if t == "" && def == "" {
			return "", nil
		}
		for _, a := range allowed {
			if strings.EqualFold(t, a) {
				return a, nil
			}
		}
		return "", fmt.Errorf("expected one of [%s]", strings.Join(allowed, ", "))
	}, deprecated...)
}

// Float declares a number option within [min, max].
func Float(key string, def, min, max float64, desc string, deprecated ...string) *Option[float64] {
	return declare(key, strconv.FormatFloat(def, 'g', -1, 64), "Double", desc, func(v string) (float64, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || f < min || f > max {
			if math.IsInf(max, 1) {
				return 0, fmt.Errorf("expected a number >= %g", min)
			}
			return 0, fmt.Errorf("expected a number between %g and %g", min, max)
		}
		return f, nil
	}, deprecated...)
}

// String declares a free-text option; check, when not nil, validates it.
func String(key, def, desc string, check func(string) error, deprecated ...string) *Option[string] {
	return declare(key, def, "String", desc, func(v string) (string, error) {
		if check != nil {
			if err := check(v); err != nil {
				return "", err
			}
		}
		return v, nil
	}, deprecated...)
}

// Values are a session's option values: what SET stored, over the
// defaults.
type Values struct {
	reg *Registry
	set map[string]string
}

// Registry is a set of declared options, looked up by key or deprecated
// key.
type Registry struct {
	specs []*Spec
	byKey map[string]*Spec
}

// NewRegistry indexes specs; a key declared twice panics (a programming
// error, found by the package's tests).
func NewRegistry(specs ...*Spec) *Registry {
	r := &Registry{specs: slices.Clone(specs), byKey: map[string]*Spec{}}
	sort.Slice(r.specs, func(i, j int) bool { return r.specs[i].Key < r.specs[j].Key })
	for _, s := range r.specs {
		for _, k := range append([]string{s.Key}, s.Deprecated...) {
			if _, dup := r.byKey[k]; dup {
				panic("options: key " + k + " declared twice")
			}
			r.byKey[k] = s
		}
	}
	return r
}

// Specs lists the declared options by key.
func (r *Registry) Specs() []*Spec { return slices.Clone(r.specs) }

// Lookup finds the option of key, which may be a deprecated key.
func (r *Registry) Lookup(key string) (*Spec, bool) {
	s, ok := r.byKey[key]
	return s, ok
}

// NewValues returns values with nothing set.
func (r *Registry) NewValues() *Values { return &Values{reg: r, set: map[string]string{}} }

// Set stores value under key (a deprecated key stores under the current
// one), validating the value of a declared option. A key no option
// declares is stored too, as Flink's configuration does, and warning then
// says so, naming the nearest declared key when one is close.
func (v *Values) Set(key, value string) (warning string, err error) {
	s, ok := v.reg.Lookup(key)
	if !ok {
		v.set[key] = value
		w := fmt.Sprintf("'%s' is not an option flinksql reads; it is stored and has no effect.", key)
		if near := v.reg.nearest(key); near != "" {
			w += fmt.Sprintf(" Did you mean '%s'?", near)
		}
		return w, nil
	}
	if err := s.Check(value); err != nil {
		return "", err
	}
	v.set[s.Key] = value
	return "", nil
}

// Reset forgets what SET stored for key (a deprecated key resets the
// current one); an empty key resets everything.
func (v *Values) Reset(key string) {
	if key == "" {
		clear(v.set)
		return
	}
	if s, ok := v.reg.Lookup(key); ok {
		key = s.Key
	}
	delete(v.set, key)
}

// Get returns the value of key as text: the value set, else the declared
// option's default (key may be deprecated), else "".
func (v *Values) Get(key string) string {
	if s, ok := v.reg.Lookup(key); ok {
		return v.raw(s.Key, s.Default)
	}
	return v.set[key]
}

// Raw returns the value stored for a key, declared or not.
func (v *Values) Raw(key string) (string, bool) {
	val, ok := v.set[key]
	return val, ok
}

func (v *Values) raw(key, def string) string {
	if val, ok := v.set[key]; ok {
		return val
	}
	return def
}

// WithPrefix returns the stored values whose keys start with prefix.
func (v *Values) WithPrefix(prefix string) map[string]string {
	out := map[string]string{}
	for k, val := range v.set {
		if strings.HasPrefix(k, prefix) {
			out[k] = val
		}
	}
	return out
}

// List returns every declared option with its value (set or default) and
// every undeclared key that was set, sorted by key: the table of `SET;`.
func (v *Values) List() [][]string {
	var rows [][]string
	for _, s := range v.reg.specs {
		rows = append(rows, []string{s.Key, v.raw(s.Key, s.Default)})
	}
	for k, val := range v.set {
		if _, ok := v.reg.byKey[k]; !ok {
			rows = append(rows, []string{k, val})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}

// nearest returns the declared key closest to key by edit distance, when
// it is close enough to be a typo (at most a third of the key's length).
func (r *Registry) nearest(key string) string {
	best, bestD := "", len(key)/3+1
	for k := range r.byKey {
		if d := editDistance(key, k); d < bestD || (d == bestD && best != "" && k < best) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
