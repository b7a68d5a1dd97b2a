package expr

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// regexWindow narrows the search of a constant regular expression whose
// matches all contain a literal a bounded number of bytes after their start,
// as `(&|^)channel_id=([^&]*)` (q21) contains "channel_id=" at most one byte
// in. No match can start more than lead bytes before the literal's first
// occurrence, so the engine need not try the start positions before that:
// strings.Index finds the literal, and the search runs on the rest of the
// string. Go's engine has no literal prefix to skip to for such patterns and
// otherwise tries every position from the first.
//
// The search of the rest must see the same match the whole string's would:
// it finds the leftmost match from its first byte on, which is the leftmost
// overall because none starts earlier; and only assertions that look at the
// byte before a position could tell the cut-off string from the whole one.
// So patterns with ^ in multi-line mode or \b, \B are left alone, and \A (^
// outside multi-line mode), which can only hold at the start of the whole
// string, is replaced by an assertion that never holds in the pattern that
// searches the rest.
type regexWindow struct {
	lit  string
	lead int
	// rest is the pattern with \A never matching, for searches that start
	// past the beginning of the string.
	rest *regexp.Regexp
}

// newRegexWindow returns the window of the compiled pattern src (tree is
// its simplified syntax tree), or nil when there is none.
func newRegexWindow(tree *syntax.Regexp, fixed *regexp.Regexp) *regexWindow {
	if tree.Op != syntax.OpConcat || hasContextAssertion(tree) {
		return nil
	}
	lead := 0
	for i, sub := range tree.Sub {
		if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 && i > 0 {
			rest := withoutBeginText(tree)
			re, err := regexp.Compile(rest.String())
			if err != nil || re.NumSubexp() != fixed.NumSubexp() {
				return nil
			}
			return &regexWindow{lit: string(sub.Rune), lead: lead, rest: re}
		}
		w, ok := maxWidth(sub)
		if !ok {
			return nil
		}
		lead += w
	}
	return nil
}

// find is re.FindStringSubmatchIndex(s) for the pattern of the window.
func (w *regexWindow) find(re *regexp.Regexp, s string) []int {
	p := strings.Index(s, w.lit)
	if p < 0 {
		return nil
	}
	k := p - w.lead
	// A match starts on a character, never inside one.
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	if k <= 0 {
		return re.FindStringSubmatchIndex(s)
	}
	m := w.rest.FindStringSubmatchIndex(s[k:])
	for i := range m {
		if m[i] >= 0 {
			m[i] += k
		}
	}
	return m
}

// match is re.MatchString(s) for the pattern of the window.
func (w *regexWindow) match(re *regexp.Regexp, s string) bool {
	p := strings.Index(s, w.lit)
	if p < 0 {
		return false
	}
	k := p - w.lead
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	if k <= 0 {
		return re.MatchString(s)
	}
	return w.rest.MatchString(s[k:])
}

// maxWidth is the most bytes of UTF-8 a match of re spans; ok is false when
// that is unbounded. A byte that is not UTF-8 is read as one character of
// one byte, so it never spans more than the character it stands for.
func maxWidth(re *syntax.Regexp) (n int, ok bool) {
	switch re.Op {
	case syntax.OpNoMatch, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			// A folded letter may be wider than its spelling (k, K: K).
			return utf8.UTFMax * len(re.Rune), true
		}
		for _, r := range re.Rune {
			n += runeWidth(r)
		}
		return n, true
	case syntax.OpCharClass:
		for i := 1; i < len(re.Rune); i += 2 {
			n = max(n, runeWidth(re.Rune[i]))
		}
		return n, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxWidth(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		w, ok := maxWidth(re.Sub[0])
		return w * re.Max, ok
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			w, ok := maxWidth(sub)
			if !ok {
				return 0, false
			}
			n += w
		}
		return n, true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			w, ok := maxWidth(sub)
			if !ok {
				return 0, false
			}
			n = max(n, w)
		}
		return n, true
	}
	return 0, false // star, plus and anything unknown
}

func runeWidth(r rune) int {
	if w := utf8.RuneLen(r); w > 0 {
		return w
	}
	return utf8.UTFMax
}

// hasContextAssertion reports whether re looks at the byte before a
// position: multi-line ^, \b or \B.
func hasContextAssertion(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if hasContextAssertion(sub) {
			return true
		}
	}
	return false
}

// withoutBeginText returns a copy of re in which \A never matches.
func withoutBeginText(re *syntax.Regexp) *syntax.Regexp {
	c := *re
	if c.Op == syntax.OpBeginText {
		return &syntax.Regexp{Op: syntax.OpNoMatch, Flags: c.Flags}
	}
	c.Sub = make([]*syntax.Regexp, len(re.Sub))
	for i, sub := range re.Sub {
		c.Sub[i] = withoutBeginText(sub)
	}
	return &c
}
