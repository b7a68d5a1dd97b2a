package expr

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"slices"
	"testing"
)

func windowOf(t *testing.T, pattern string) (*regexp.Regexp, *regexWindow) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	return re, newRegexWindow(tree.Simplify(), re)
}

// TestRegexWindowShape: which patterns get a window, with which literal and
// lead (worked out by hand from the patterns).
func TestRegexWindowShape(t *testing.T) {
	for _, c := range []struct {
		pattern string
		lit     string // "" when no window
		lead    int
	}{
		{`(&|^)channel_id=([^&]*)`, "channel_id=", 1},
		{`a.bc`, "bc", 5},         // a (1) + any character (up to 4 bytes)
		{`x?é{2}yz`, "yz", 5},     // x? (1) + é é (2 each)
		{`(ab|cde)fg`, "fg", 3},   // the wider alternative
		{`[a-z]+=(\d+)`, "", 0},   // unbounded before the literal
		{`abc(\d+)`, "", 0},       // literal first: Go skips to it already
		{`\bfoo=(\d+)`, "", 0},    // \b looks at the byte before
		{`(?m)^foo=(\d+)`, "", 0}, // so does multi-line ^
		{`(?i)a(b)`, "", 0},       // folded literals are not searched for
		{`[0-9]+`, "", 0},
	} {
		_, w := windowOf(t, c.pattern)
		switch {
		case c.lit == "" && w != nil:
			t.Errorf("%s: window %q lead %d, want none", c.pattern, w.lit, w.lead)
		case c.lit != "" && w == nil:
			t.Errorf("%s: no window, want %q lead %d", c.pattern, c.lit, c.lead)
		case c.lit != "" && (w.lit != c.lit || w.lead != c.lead):
			t.Errorf("%s: window %q lead %d, want %q lead %d", c.pattern, w.lit, w.lead, c.lit, c.lead)
		}
	}
}

// TestRegexWindowAgrees: the windowed search finds what the engine finds
// on the whole string, for worked cases (the start of the string for ^,
// multi-byte characters before the literal, several occurrences) and for
// random strings over a small alphabet that makes matches likely.
func TestRegexWindowAgrees(t *testing.T) {
	patterns := []string{
		`(&|^)channel_id=([^&]*)`,
		`(&|^)k=([^&]*)$`,
		`a.bc`,
		`x?é{2}yz`,
		`(ab|cde)fg`,
		`(^a|b)c(d*)`,
		`.{0,3}é=(\w*)`,
	}
	worked := []struct {
		pattern, s string
		want       []int
	}{
		{`(&|^)channel_id=([^&]*)`, "channel_id=7&x=1", []int{0, 12, 0, 0, 11, 12}},
		{`(&|^)channel_id=([^&]*)`, "q=1&channel_id=42", []int{3, 17, 3, 4, 15, 17}},
		{`(&|^)channel_id=([^&]*)`, "xchannel_id=1&channel_id=2", []int{13, 26, 13, 14, 25, 26}},
		{`(&|^)channel_id=([^&]*)`, "https://h/x?query=1", nil},
		{`a.bc`, "zzaébc", []int{2, 7}}, // é is 2 bytes: the start is cut back to a character
		{`(^a|b)c(d*)`, "zacd", nil},    // ^a only at the start of the whole string
		{`(^a|b)c(d*)`, "acdd", []int{0, 4, 0, 1, 2, 4}},
	}
	for _, c := range worked {
		re, w := windowOf(t, c.pattern)
		if w == nil {
			t.Fatalf("%s: no window", c.pattern)
		}
		if got := w.find(re, c.s); !slices.Equal(got, c.want) {
			t.Errorf("%s on %q: %v, want %v", c.pattern, c.s, got, c.want)
		}
		if got := w.match(re, c.s); got != (c.want != nil) {
			t.Errorf("%s matches %q: %v, want %v", c.pattern, c.s, got, c.want != nil)
		}
	}
	alphabet := []string{"&", "^", "a", "b", "c", "d", "é", "=", "x", "y", "z", "k", "fg", "channel_id=", "\xff", "1"}
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range patterns {
		re, w := windowOf(t, p)
		if w == nil {
			t.Fatalf("%s: no window", p)
		}
		for range 20_000 {
			var s string
			for range r.IntN(12) {
				s += alphabet[r.IntN(len(alphabet))]
			}
			if got, want := w.find(re, s), re.FindStringSubmatchIndex(s); !slices.Equal(got, want) {
				t.Fatalf("%s on %q: %v, want %v", p, s, got, want)
			}
			if got, want := w.match(re, s), re.MatchString(s); got != want {
				t.Fatalf("%s matches %q: %v, want %v", p, s, got, want)
			}
		}
	}
}
