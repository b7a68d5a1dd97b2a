package expr

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// registerMoreStringFunctions adds PARSE_URL and the forms of INSTR,
// FROM_BASE64 and SPLIT_INDEX beyond the basic ones, wrapping the existing
// builders for those.
func registerMoreStringFunctions(m map[string]builder) {
	m["PARSE_URL"] = buildParseURL
	basicInstr := m["INSTR"]
	m["INSTR"] = func(name string, args []Expr) (Expr, error) {
		if len(args) <= 2 {
			return basicInstr(name, args)
		}
		if len(args) > 4 || !famString(args[0].Type()) || !famString(args[1].Type()) || !famInteger(args[2].Type()) || len(args) == 4 && !famInteger(args[3].Type()) {
			return nil, cannotApply(name, args, "INSTR(<CHARACTER>, <CHARACTER>)", "INSTR(<CHARACTER>, <CHARACTER>, <INTEGER>)", "INSTR(<CHARACTER>, <CHARACTER>, <INTEGER>, <INTEGER>)")
		}
		return newCall(name, args, types.IntType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			nth := int64(1)
			if len(v) == 4 {
				nth = v[3].N
			}
			if nth <= 0 {
				return types.NullValue, fmt.Errorf("INSTR: nthAppearance must be positive, got %d", nth)
			}
			return types.Int(instr([]rune(v[0].S), []rune(v[1].S), v[2].N, nth)), nil
		})), nil
	}
	basicFromBase64 := m["FROM_BASE64"]
	m["FROM_BASE64"] = func(name string, args []Expr) (Expr, error) {
		if len(args) != 1 || !famBinary(args[0].Type()) || isNull(args[0].Type()) {
			return basicFromBase64(name, args)
		}
		// The argument's family is STRING (character or binary): bytes are
		// read as the UTF-8 text of the base64 string.
		return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			b, err := base64.StdEncoding.DecodeString(v[0].S)
			if err != nil {
				return types.NullValue, fmt.Errorf("FROM_BASE64: invalid base64 input: %w", err)
			}
			return types.String(string(b)), nil
		})), nil
	}
	basicSplit := m["SPLIT_INDEX"]
	m["SPLIT_INDEX"] = func(name string, args []Expr) (Expr, error) {
		if len(args) != 3 || !args[1].Type().IsInteger() {
			return basicSplit(name, args)
		}
		if !famString(args[0].Type()) || !famInteger(args[2].Type()) {
			return nil, cannotApply(name, args, "SPLIT_INDEX(<CHARACTER>, <CHARACTER>, <INTEGER>)", "SPLIT_INDEX(<CHARACTER>, <INTEGER>, <INTEGER>)")
		}
		c := newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			// The delimiter is a character code 1..255; tokens are
			// kept also when empty.
			ch, idx := v[1].N, v[2].N
			if ch < 1 || ch > 255 || idx < 0 {
				return types.NullValue, nil
			}
			parts := strings.Split(v[0].S, string(rune(ch)))
			if v[0].S == "" || idx >= int64(len(parts)) {
				return types.NullValue, nil
			}
			return types.String(parts[idx]), nil
		}))
		c.t.NotNull = false
		return c, nil
	}
}

// instr is Flink's INSTR(str, sub, start, nth): the 1-based position of the
// nth occurrence of sub searching from start; a negative start searches
// backwards from that many characters before the end; 0 when not found or
// start is 0.
func instr(s, sub []rune, start, nth int64) int64 {
	if start == 0 {
		return 0
	}
	if start < 0 {
		rs, rsub := reverseRunes(s), reverseRunes(sub)
		pos := instr(rs, rsub, -start, nth)
		if pos == 0 {
			return 0
		}
		return int64(len(s)) + 2 - pos - int64(len(sub))
	}
	from := start
	var index int64
	for i := int64(0); i < nth; i++ {
		at := indexRunes(s, sub, from-1)
		if at < 0 {
			return 0
		}
		index = at + 1
		from = index + 1
	}
	return index
}

func reverseRunes(r []rune) []rune {
	out := make([]rune, len(r))
	for i, c := range r {
		out[len(r)-1-i] = c
	}
	return out
}

// indexRunes is Java's String.indexOf(sub, from) over characters.
func indexRunes(s, sub []rune, from int64) int64 {
	if from < 0 {
		from = 0
	}
	for i := from; i+int64(len(sub)) <= int64(len(s)); i++ {
		match := true
		for j := range sub {
			if s[i+int64(j)] != sub[j] {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

var urlSchemes = map[string]bool{"http": true, "https": true, "ftp": true, "file": true, "jar": true, "mailto": true, "netdoc": true}

// buildParseURL is PARSE_URL(url, part[, key]) with java.net.URL's parts:
// HOST, PATH, QUERY, REF, PROTOCOL, FILE, AUTHORITY, USERINFO; with a key,
// the value of that query parameter. A malformed URL or an absent part is
// NULL.
func buildParseURL(name string, args []Expr) (Expr, error) {
	if (len(args) != 2 && len(args) != 3) || !famString(args[0].Type()) || !famString(args[1].Type()) || len(args) == 3 && !famString(args[2].Type()) {
		return nil, cannotApply(name, args, "PARSE_URL(<CHARACTER>, <CHARACTER>)", "PARSE_URL(<CHARACTER>, <CHARACTER>, <CHARACTER>)")
	}
	c := newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		part, ok := urlPart(v[0].S, v[1].S)
		if !ok {
			return types.NullValue, nil
		}
		if len(v) == 3 {
			if v[1].S != "QUERY" {
				return types.NullValue, nil
			}
			re, err := regexp.Compile("(&|^)" + regexp.QuoteMeta(v[2].S) + "=([^&]*)")
			if err != nil {
				return types.NullValue, nil
			}
			m := re.FindStringSubmatch(part)
			if m == nil {
				return types.NullValue, nil
			}
			return types.String(m[2]), nil
		}
		return types.String(part), nil
	}))
	c.t.NotNull = false
	return c, nil
}

func urlPart(raw, part string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || !urlSchemes[strings.ToLower(u.Scheme)] {
		return "", false
	}
	query, hasQuery := u.RawQuery, u.RawQuery != "" || u.ForceQuery
	path := u.EscapedPath()
	if u.Opaque != "" {
		path = u.Opaque
	}
	switch part {
	case "HOST":
		return u.Hostname(), true
	case "PATH":
		return path, true
	case "QUERY":
		return query, hasQuery
	case "REF":
		i := strings.IndexByte(raw, '#')
		return raw[i+1:], i >= 0
	case "PROTOCOL":
		return u.Scheme, true
	case "FILE":
		if hasQuery {
			return path + "?" + query, true
		}
		return path, true
	case "AUTHORITY":
		if u.User != nil {
			return u.User.String() + "@" + u.Host, true
		}
		return u.Host, u.Host != ""
	case "USERINFO":
		if u.User == nil {
			return "", false
		}
		return u.User.String(), true
	}
	return "", false
}
