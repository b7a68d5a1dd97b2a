package expr

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/flinksql/flinksql/types"
)

func registerStringFunctions(m map[string]builder) {
	m["||"] = buildConcatOp
	m["CONCAT"] = buildConcat
	m["CONCAT_WS"] = buildConcatWS
	m["UPPER"] = stringMap(strings.ToUpper)
	m["LOWER"] = stringMap(strings.ToLower)
	m["INITCAP"] = stringMap(initCap)
	m["REVERSE"] = stringMap(reverseString)
	m["SUBSTRING"] = buildSubstring
	m["SUBSTR"] = buildSubstring
	m["CHAR_LENGTH"] = buildCharLength
	m["CHARACTER_LENGTH"] = buildCharLength
	m["TRIM"] = buildTrim
	m["LTRIM"] = buildSideTrim
	m["RTRIM"] = buildSideTrim
	m["BTRIM"] = buildSideTrim
	m["REPLACE"] = buildReplace
	m["REGEXP_REPLACE"] = buildRegexpReplace
	m["REGEXP_EXTRACT"] = buildRegexpExtract
	m["REGEXP"] = buildRegexp
	m["SPLIT_INDEX"] = buildSplitIndex
	m["POSITION"] = buildPosition
	m["LOCATE"] = buildPosition
	m["INSTR"] = buildPosition
	m["LPAD"] = buildPad
	m["RPAD"] = buildPad
	m["REPEAT"] = buildRepeat
	m["LEFT"] = buildLeftRight
	m["RIGHT"] = buildLeftRight
	m["ASCII"] = buildASCII
	m["CHR"] = buildChr
	m["MD5"] = hashFunc(func() hash.Hash { return md5.New() })
	m["SHA1"] = hashFunc(func() hash.Hash { return sha1.New() })
	m["SHA224"] = hashFunc(func() hash.Hash { return sha256.New224() })
	m["SHA256"] = hashFunc(func() hash.Hash { return sha256.New() })
	m["SHA384"] = hashFunc(func() hash.Hash { return sha512.New384() })
	m["SHA512"] = hashFunc(func() hash.Hash { return sha512.New() })
	m["SHA2"] = buildSHA2
	m["TO_BASE64"] = buildToBase64
	m["FROM_BASE64"] = buildFromBase64
	m["STR_TO_MAP"] = buildStrToMap
	m["UUID"] = buildUUID
	m["OVERLAY"] = buildOverlay
	m["LIKE"] = buildLike
	m["NOT LIKE"] = buildLike
	m["SIMILAR TO"] = buildSimilar
	m["NOT SIMILAR TO"] = buildSimilar
	m["ENCODE"] = buildEncode
	m["DECODE"] = buildDecode
}

func strLen(t types.Type) int {
	if t.Root == types.RootNull {
		return types.MaxLength
	}
	return t.Precision
}

// varcharOf is VARCHAR with the length of a string argument.
func varcharOf(t types.Type) types.Type {
	return types.VarCharType(strLen(t)).WithNullable(t.Nullable())
}

func stringMap(f func(string) string) builder {
	return func(name string, args []Expr) (Expr, error) {
		if err := checkArgs(name, args, name+"(<CHARACTER>)", famString); err != nil {
			return nil, err
		}
		t := args[0].Type()
		if t.Root == types.RootNull {
			t = types.StringType
		}
		if name == "REVERSE" {
			t = varcharOf(t)
		}
		return newCall(name, []Expr{stringArg(args[0])}, t.WithoutTimeAttr(), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.String(f(v[0].S)), nil
		})), nil
	}
}

func initCap(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	start := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start {
				b.WriteRune(unicode.ToUpper(r))
			} else {
				b.WriteRune(unicode.ToLower(r))
			}
			start = false
		} else {
			b.WriteRune(r)
			start = true
		}
	}
	return b.String()
}

func reverseString(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func buildConcatOp(_ string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, wrongArgCount("||", args, "2")
	}
	a, b := typeOrOther(args[0].Type(), args[1].Type()), typeOrOther(args[1].Type(), args[0].Type())
	var t types.Type
	switch {
	case a.IsString() && b.IsString():
		n := min(int64(a.Precision)+int64(b.Precision), types.MaxLength)
		if a.Root == types.RootChar && b.Root == types.RootChar {
			t = types.CharType(int(n))
		} else {
			t = types.VarCharType(int(n))
		}
	case a.IsBinary() && b.IsBinary():
		n := min(int64(a.Precision)+int64(b.Precision), types.MaxLength)
		t = types.Type{Root: types.RootVarBinary, Precision: int(n)}
		if a.Root == types.RootBinary && b.Root == types.RootBinary {
			t.Root = types.RootBinary
		}
	default:
		return nil, cannotApply("||", args, "<STRING> || <STRING>")
	}
	t.NotNull = a.NotNull && b.NotNull
	kind := types.KindString
	if t.IsBinary() {
		kind = types.KindBytes
	}
	return newCall("||", args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		return types.Value{K: kind, S: v[0].S + v[1].S}, nil
	})), nil
}

func buildConcat(name string, args []Expr) (Expr, error) {
	if len(args) < 1 {
		return nil, wrongArgCount(name, args, "at least 1")
	}
	allBinary := true
	for _, a := range args {
		t := a.Type()
		if !famStringOrBinary(t) {
			return nil, cannotApply(name, args, "CONCAT(<CHARACTER>, ...)")
		}
		if !t.IsBinary() {
			allBinary = false
		}
	}
	t := types.StringType.WithNullable(anyNullable(args))
	kind := types.KindString
	if allBinary {
		t = types.BytesType.WithNullable(anyNullable(args))
		kind = types.KindBytes
	}
	return newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if len(v) == 2 {
			return types.Value{K: kind, S: v[0].S + v[1].S}, nil
		}
		var b strings.Builder
		for _, x := range v {
			b.WriteString(x.S)
		}
		return types.Value{K: kind, S: b.String()}, nil
	})), nil
}

func buildConcatWS(name string, args []Expr) (Expr, error) {
	if len(args) < 1 {
		return nil, wrongArgCount(name, args, "at least 1")
	}
	for _, a := range args {
		if !famString(a.Type()) {
			return nil, cannotApply(name, args, "CONCAT_WS(<CHARACTER>, <CHARACTER>, ...)")
		}
	}
	t := types.StringType.WithNullable(args[0].Type().Nullable())
	return &callExpr{name: name, args: args, t: t, impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if v[0].K == types.KindNull {
			return types.Value{}, nil
		}
		var b strings.Builder
		first := true
		for _, x := range v[1:] {
			if x.K == types.KindNull {
				continue
			}
			if !first {
				b.WriteString(v[0].S)
			}
			b.WriteString(x.S)
			first = false
		}
		return types.String(b.String()), nil
	}}}, nil
}

// substringSQL implements SUBSTRING with Flink's rules for start positions
// (1-based; 0 is treated as 1; negative counts from the end).
func substringSQL(s string, pos, length int64, hasLen bool) (string, bool) {
	if hasLen && length < 0 {
		return "", false
	}
	r := []rune(s)
	n := int64(len(r))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
		if start >= n {
			return "", true
		}
	case pos < 0:
		start = n + pos
		if start < 0 {
			return "", true
		}
	}
	end := n
	if hasLen && n-start >= length {
		end = start + length
	}
	return string(r[start:end]), true
}

func buildSubstring(name string, args []Expr) (Expr, error) {
	forms := []string{name + "(<CHARACTER>, <INTEGER>)", name + "(<CHARACTER>, <INTEGER>, <INTEGER>)"}
	if len(args) < 2 || len(args) > 3 || !famString(args[0].Type()) || !famInteger(args[1].Type()) ||
		(len(args) == 3 && !famInteger(args[2].Type())) {
		return nil, cannotApply(name, args, forms...)
	}
	t := varcharOf(args[0].Type())
	hasLen := len(args) == 3
	im := strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		var l int64
		if hasLen {
			l = v[2].N
		}
		s, ok := substringSQL(v[0].S, v[1].N, l, hasLen)
		if !ok {
			return types.Value{}, nil
		}
		return types.String(s), nil
	})
	c := newCall("SUBSTRING", args, t, im)
	if hasLen {
		c.t.NotNull = false
	}
	return c, nil
}

func buildCharLength(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, name+"(<CHARACTER>)", famString); err != nil {
		return nil, err
	}
	return newCall(name, args, types.IntType.WithNullable(false), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		return types.Int(int64(utf8.RuneCountInString(v[0].S))), nil
	})), nil
}

func trimChars(s, chars string, leading, trailing bool) string {
	if leading {
		s = strings.TrimLeft(s, chars)
	}
	if trailing {
		s = strings.TrimRight(s, chars)
	}
	return s
}

func buildTrim(name string, args []Expr) (Expr, error) {
	form := "TRIM(<SYMBOL>, <CHARACTER>, <CHARACTER>)"
	var mode string
	switch {
	case len(args) == 1 && famString(args[0].Type()):
		mode, args = "BOTH", []Expr{Symbol("BOTH"), StringLiteral(" "), args[0]}
	case len(args) == 2 && famSymbol(args[0].Type()) && famString(args[1].Type()):
		v, _ := LiteralValue(args[0])
		mode, args = v.S, []Expr{args[0], StringLiteral(" "), args[1]}
	case len(args) == 3 && famSymbol(args[0].Type()) && famString(args[1].Type()) && famString(args[2].Type()):
		v, _ := LiteralValue(args[0])
		mode = v.S
	default:
		return nil, cannotApply(name, args, form)
	}
	leading, trailing := mode != "TRAILING", mode != "LEADING"
	t := varcharOf(args[2].Type())
	t.NotNull = !args[1].Type().Nullable() && !args[2].Type().Nullable()
	return newCall("TRIM", args, t, impl{strict: false, fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if v[1].K == types.KindNull || v[2].K == types.KindNull {
			return types.Value{}, nil
		}
		return types.String(trimChars(v[2].S, v[1].S, leading, trailing)), nil
	}}), nil
}

func buildSideTrim(name string, args []Expr) (Expr, error) {
	if len(args) < 1 || len(args) > 2 || !famString(args[0].Type()) || (len(args) == 2 && !famString(args[1].Type())) {
		return nil, cannotApply(name, args, name+"(<CHARACTER>)", name+"(<CHARACTER>, <CHARACTER>)")
	}
	leading, trailing := name != "RTRIM", name != "LTRIM"
	return newCall(name, args, varcharOf(args[0].Type()), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		chars := " "
		if len(v) == 2 {
			chars = v[1].S
		}
		return types.String(trimChars(v[0].S, chars, leading, trailing)), nil
	})), nil
}

func buildReplace(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "REPLACE(<CHARACTER>, <CHARACTER>, <CHARACTER>)", famString, famString, famString); err != nil {
		return nil, err
	}
	return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if v[1].S == "" {
			return v[0], nil
		}
		return types.String(strings.ReplaceAll(v[0].S, v[1].S, v[2].S)), nil
	})), nil
}

// regexSource resolves a regular expression argument: compiled once when
// it is a constant, per distinct value (cached per evaluator) otherwise.
type regexSource struct {
	fixed    *regexp.Regexp
	fixedErr error
	constant bool
	// required is a literal every match of fixed contains ("" if none is
	// known): a string without it cannot match, which strings.Contains
	// tells far faster than the regexp engine.
	required string
	// win narrows the search of fixed (regexwindow.go); nil when it cannot.
	win *regexWindow
}

// find is re.FindStringSubmatchIndex(s), through the window of a constant
// pattern when it has one.
func (rs *regexSource) find(re *regexp.Regexp, s string) []int {
	if rs.constant && rs.win != nil {
		return rs.win.find(re, s)
	}
	return re.FindStringSubmatchIndex(s)
}

// match is re.MatchString(s), through the window of a constant pattern
// when it has one.
func (rs *regexSource) match(re *regexp.Regexp, s string) bool {
	if rs.constant && rs.win != nil {
		return rs.win.match(re, s)
	}
	return re.MatchString(s)
}

// cannotMatch reports whether s certainly has no match of the constant
// expression.
func (rs *regexSource) cannotMatch(s string) bool {
	return rs.constant && rs.required != "" && !strings.Contains(s, rs.required)
}

// requiredLiteral returns the longest literal that every match of re
// contains, or "".
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return string(re.Rune)
		}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

func newRegexSource(arg Expr, convert func(string) (string, error)) *regexSource {
	rs := &regexSource{}
	if v, ok := LiteralValue(arg); ok && !v.IsNull() {
		rs.constant = true
		src, err := convert(v.S)
		if err == nil {
			rs.fixed, err = regexp.Compile(src)
		}
		rs.fixedErr = err
		if err == nil {
			if tree, perr := syntax.Parse(src, syntax.Perl); perr == nil {
				tree = tree.Simplify()
				rs.required = requiredLiteral(tree)
				rs.win = newRegexWindow(tree, rs.fixed)
			}
		}
	}
	return rs
}

func (rs *regexSource) get(c *evalCtx, pattern string, convert func(string) (string, error)) (*regexp.Regexp, error) {
	if rs.constant {
		return rs.fixed, rs.fixedErr
	}
	if re, ok := c.regs[pattern]; ok {
		return re, nil
	}
	src, err := convert(pattern)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	if c.regs == nil || len(c.regs) > 256 {
		c.regs = map[string]*regexp.Regexp{}
	}
	c.regs[pattern] = re
	return re, nil
}

// javaRegex adapts a Java regular expression to Go's syntax where they differ
// in spelling only; constructs RE2 lacks (look-around, back-references) fail.
func javaRegex(p string) (string, error) { return p, nil }

// javaReplacement converts Java's $n group references to Go's ${n}.
func javaReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
		case r[i] == '$' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			j := i + 1
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			b.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
		case r[i] == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(r[i])
		}
	}
	return b.String()
}

func buildRegexpReplace(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "REGEXP_REPLACE(<CHARACTER>, <CHARACTER>, <CHARACTER>)", famString, famString, famString); err != nil {
		return nil, err
	}
	rs := newRegexSource(args[1], javaRegex)
	c := newCall(name, args, types.StringType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		re, err := rs.get(c, v[1].S, javaRegex)
		if err != nil {
			return types.Value{}, nil
		}
		return types.String(re.ReplaceAllString(v[0].S, javaReplacement(v[2].S))), nil
	}))
	c.t.NotNull = false
	return c, nil
}

func buildRegexpExtract(name string, args []Expr) (Expr, error) {
	forms := []string{"REGEXP_EXTRACT(<CHARACTER>, <CHARACTER>)", "REGEXP_EXTRACT(<CHARACTER>, <CHARACTER>, <INTEGER>)"}
	if len(args) < 2 || len(args) > 3 || !famString(args[0].Type()) || !famString(args[1].Type()) || (len(args) == 3 && !famInteger(args[2].Type())) {
		return nil, cannotApply(name, args, forms...)
	}
	rs := newRegexSource(args[1], javaRegex)
	c := newCall(name, args, types.StringType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		if rs.cannotMatch(v[0].S) {
			return types.Value{}, nil
		}
		re, err := rs.get(c, v[1].S, javaRegex)
		if err != nil {
			return types.Value{}, nil
		}
		// Without an index the whole match (group 0), as Flink's
		// regexpExtract(str, regex) does.
		idx := int64(0)
		if len(v) == 3 {
			idx = v[2].N
		}
		m := rs.find(re, v[0].S)
		if m == nil || idx < 0 || int(idx) > re.NumSubexp() || m[2*idx] < 0 {
			return types.Value{}, nil
		}
		return types.String(v[0].S[m[2*idx]:m[2*idx+1]]), nil
	}))
	c.t.NotNull = false
	return c, nil
}

func buildRegexp(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "REGEXP(<CHARACTER>, <CHARACTER>)", famString, famString); err != nil {
		return nil, err
	}
	rs := newRegexSource(args[1], javaRegex)
	c := newCall(name, args, types.BooleanType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		re, err := rs.get(c, v[1].S, javaRegex)
		if err != nil {
			return types.Value{}, nil
		}
		if rs.cannotMatch(v[0].S) {
			return types.Bool(false), nil
		}
		return types.Bool(rs.match(re, v[0].S)), nil
	}))
	c.t.NotNull = false
	return c, nil
}

// splitIndex returns token idx of s split at sep, as Java's String.split
// splits (trailing empty tokens dropped), without building the tokens.
func splitIndex(s, sep string, idx int64) (string, bool) {
	start := 0
	for range idx {
		i := strings.Index(s[start:], sep)
		if i < 0 {
			return "", false
		}
		start += i + len(sep)
	}
	end := len(s)
	if i := strings.Index(s[start:], sep); i >= 0 {
		end = start + i
	}
	// The token is dropped when it and every token after it are empty:
	// nothing but separators from its start on.
	rest := s[start:]
	for strings.HasPrefix(rest, sep) {
		rest = rest[len(sep):]
	}
	if rest == "" {
		return "", false
	}
	return s[start:end], true
}

func buildSplitIndex(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "SPLIT_INDEX(<CHARACTER>, <CHARACTER>, <INTEGER>)", famString, famString, famInteger); err != nil {
		return nil, err
	}
	c := newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		idx := v[2].N
		if idx < 0 || v[1].S == "" {
			return types.Value{}, nil
		}
		if part, ok := splitIndex(v[0].S, v[1].S, idx); ok {
			return types.String(part), nil
		}
		return types.Value{}, nil
	}))
	c.t.NotNull = false
	return c, nil
}

// runeIndex returns the 1-based character position of sub in s at or after
// character position from (1-based), or 0.
func runeIndex(s, sub string, from int64) int64 {
	if from < 1 {
		return 0
	}
	r := []rune(s)
	if from-1 > int64(len(r)) {
		return 0
	}
	tail := string(r[from-1:])
	i := strings.Index(tail, sub)
	if i < 0 {
		return 0
	}
	return from + int64(utf8.RuneCountInString(tail[:i]))
}

func buildPosition(name string, args []Expr) (Expr, error) {
	var forms []string
	switch name {
	case "POSITION":
		forms = []string{"POSITION(<STRING> IN <STRING>)"}
	case "LOCATE":
		forms = []string{"LOCATE(<CHARACTER>, <CHARACTER>)", "LOCATE(<CHARACTER>, <CHARACTER>, <INTEGER>)"}
	default:
		forms = []string{"INSTR(<CHARACTER>, <CHARACTER>)"}
	}
	ok := (len(args) == 2 || (len(args) == 3 && name == "LOCATE" && famInteger(args[2].Type()))) &&
		famString(args[0].Type()) && famString(args[1].Type())
	if !ok {
		return nil, cannotApply(name, args, forms...)
	}
	instr := name == "INSTR"
	return newCall(name, args, types.IntType.WithNullable(false), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		sub, s := v[0].S, v[1].S
		if instr {
			sub, s = s, sub
		}
		from := int64(1)
		if len(v) == 3 {
			from = v[2].N
		}
		return types.Int(runeIndex(s, sub, from)), nil
	})), nil
}

func buildPad(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, name+"(<CHARACTER>, <INTEGER>, <CHARACTER>)", famString, famInteger, famString); err != nil {
		return nil, err
	}
	left := name == "LPAD"
	c := newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		n := v[1].N
		if n < 0 {
			return types.Value{}, nil
		}
		s, pad := []rune(v[0].S), []rune(v[2].S)
		if int64(len(s)) >= n {
			return types.String(string(s[:n])), nil
		}
		if len(pad) == 0 {
			return types.Value{}, nil
		}
		fill := make([]rune, 0, n-int64(len(s)))
		for int64(len(fill)) < n-int64(len(s)) {
			fill = append(fill, pad[len(fill)%len(pad)])
		}
		if left {
			return types.String(string(fill) + string(s)), nil
		}
		return types.String(string(s) + string(fill)), nil
	}))
	c.t.NotNull = false
	return c, nil
}

func buildRepeat(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "REPEAT(<CHARACTER>, <INTEGER>)", famString, famInteger); err != nil {
		return nil, err
	}
	return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if v[1].N <= 0 {
			return types.String(""), nil
		}
		if int64(len(v[0].S))*v[1].N > 1<<30 {
			return types.Value{}, fmt.Errorf("REPEAT result of %d characters is too large", int64(len(v[0].S))*v[1].N)
		}
		return types.String(strings.Repeat(v[0].S, int(v[1].N))), nil
	})), nil
}

func buildLeftRight(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, name+"(<CHARACTER>, <INTEGER>)", famString, famInteger); err != nil {
		return nil, err
	}
	left := name == "LEFT"
	return newCall(name, args, varcharOf(args[0].Type()), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		n := v[1].N
		r := []rune(v[0].S)
		if n <= 0 {
			return types.String(""), nil
		}
		if n >= int64(len(r)) {
			return v[0], nil
		}
		if left {
			return types.String(string(r[:n])), nil
		}
		return types.String(string(r[int64(len(r))-n:])), nil
	})), nil
}

func buildASCII(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "ASCII(<CHARACTER>)", famString); err != nil {
		return nil, err
	}
	return newCall(name, args, types.IntType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if v[0].S == "" {
			return types.Int(0), nil
		}
		return types.Int(int64(int8(v[0].S[0]))), nil
	})), nil
}

func buildChr(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "CHR(<INTEGER>)", famInteger); err != nil {
		return nil, err
	}
	return newCall(name, args, types.CharType(1), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if v[0].N < 0 {
			return types.String(""), nil
		}
		return types.String(string(rune(v[0].N & 0xFF))), nil
	})), nil
}

func hashFunc(h func() hash.Hash) builder {
	return func(name string, args []Expr) (Expr, error) {
		if err := checkArgs(name, args, name+"(<CHARACTER>)", famStringOrBinary); err != nil {
			return nil, err
		}
		return newCall(name, args, types.CharType(h().Size()*2), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			d := h()
			d.Write([]byte(v[0].S))
			return types.String(hex.EncodeToString(d.Sum(nil))), nil
		})), nil
	}
}

func buildSHA2(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "SHA2(<CHARACTER>, <INTEGER>)", famStringOrBinary, famInteger); err != nil {
		return nil, err
	}
	c := newCall(name, args, types.VarCharType(128), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		var d hash.Hash
		switch v[1].N {
		case 224:
			d = sha256.New224()
		case 256, 0:
			d = sha256.New()
		case 384:
			d = sha512.New384()
		case 512:
			d = sha512.New()
		default:
			return types.Value{}, nil
		}
		d.Write([]byte(v[0].S))
		return types.String(hex.EncodeToString(d.Sum(nil))), nil
	}))
	c.t.NotNull = false
	return c, nil
}

func buildToBase64(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "TO_BASE64(<CHARACTER>)", famStringOrBinary); err != nil {
		return nil, err
	}
	return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		return types.String(base64.StdEncoding.EncodeToString([]byte(v[0].S))), nil
	})), nil
}

func buildFromBase64(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "FROM_BASE64(<CHARACTER>)", famString); err != nil {
		return nil, err
	}
	return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		b, err := base64.StdEncoding.DecodeString(v[0].S)
		if err != nil {
			return types.Value{}, fmt.Errorf("FROM_BASE64: invalid base64 input '%s': %w", v[0].S, err)
		}
		return types.String(string(b)), nil
	})), nil
}

func buildStrToMap(name string, args []Expr) (Expr, error) {
	if (len(args) != 1 && len(args) != 3) || !famString(args[0].Type()) || (len(args) == 3 && (!famString(args[1].Type()) || !famString(args[2].Type()))) {
		return nil, cannotApply(name, args, "STR_TO_MAP(<CHARACTER>)", "STR_TO_MAP(<CHARACTER>, <CHARACTER>, <CHARACTER>)")
	}
	t := types.MapType(types.StringType, types.StringType)
	return newCall(name, args, t, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		pairDelim, kvDelim := ",", "="
		if len(v) == 3 {
			pairDelim, kvDelim = v[1].S, v[2].S
		}
		// The delimiters are regular expressions, as in Java's String.split.
		pre, err := regexp.Compile(pairDelim)
		if err != nil {
			return types.Value{}, fmt.Errorf("STR_TO_MAP: invalid delimiter '%s': %w", pairDelim, err)
		}
		kre, err := regexp.Compile(kvDelim)
		if err != nil {
			return types.Value{}, fmt.Errorf("STR_TO_MAP: invalid delimiter '%s': %w", kvDelim, err)
		}
		var keys, vals []types.Value
		index := map[string]int{}
		for _, pair := range pre.Split(v[0].S, -1) {
			kv := kre.Split(pair, 2)
			k := kv[0]
			var val types.Value
			if len(kv) == 2 {
				val = types.String(kv[1])
			}
			if i, ok := index[k]; ok {
				vals[i] = val
				continue
			}
			index[k] = len(keys)
			keys = append(keys, types.String(k))
			vals = append(vals, val)
		}
		return types.MapOf(keys, vals), nil
	})), nil
}

func buildUUID(name string, args []Expr) (Expr, error) {
	if len(args) != 0 {
		return nil, wrongArgCount(name, args, "0")
	}
	return &callExpr{name: name, t: types.CharType(36).WithNullable(false), impl: impl{fn: func(_ *evalCtx, _ []types.Value) (types.Value, error) {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return types.Value{}, fmt.Errorf("UUID: %w", err)
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		h := hex.EncodeToString(b[:])
		return types.String(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]), nil
	}}}, nil
}

func buildOverlay(name string, args []Expr) (Expr, error) {
	if len(args) < 3 || len(args) > 4 || !famString(args[0].Type()) || !famString(args[1].Type()) || !famInteger(args[2].Type()) || (len(args) == 4 && !famInteger(args[3].Type())) {
		return nil, cannotApply(name, args, "OVERLAY(<STRING> PLACING <STRING> FROM <INTEGER>)", "OVERLAY(<STRING> PLACING <STRING> FROM <INTEGER> FOR <INTEGER>)")
	}
	return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		// Flink's rules: a start position outside [1, CHAR_LENGTH(s)]
		// leaves s unchanged; the rest of s after the replaced characters
		// is kept only when the length is positive and the replaced part
		// ends before the end of s.
		s, r := []rune(v[0].S), []rune(v[1].S)
		pos := v[2].N
		l := int64(len(r))
		if len(v) == 4 {
			l = v[3].N
		}
		n := int64(len(s))
		if pos <= 0 || pos > n {
			return v[0], nil
		}
		out := string(s[:pos-1]) + string(r)
		if l > 0 && l <= n-pos {
			out += string(s[pos-1+l:])
		}
		return types.String(out), nil
	})), nil
}

func buildEncode(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "ENCODE(<CHARACTER>, <CHARACTER>)", famString, famString); err != nil {
		return nil, err
	}
	return newCall(name, args, types.BytesType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if !isUTF8Charset(v[1].S) {
			return types.Value{}, fmt.Errorf("ENCODE: unsupported charset '%s'", v[1].S)
		}
		return types.Value{K: types.KindBytes, S: v[0].S}, nil
	})), nil
}

func buildDecode(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "DECODE(<BINARY>, <CHARACTER>)", famBinary, famString); err != nil {
		return nil, err
	}
	return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if !isUTF8Charset(v[1].S) {
			return types.Value{}, fmt.Errorf("DECODE: unsupported charset '%s'", v[1].S)
		}
		return types.String(strings.ToValidUTF8(v[0].S, "\uFFFD")), nil
	})), nil
}

func isUTF8Charset(s string) bool {
	switch strings.ToUpper(s) {
	case "UTF-8", "UTF8", "US-ASCII", "ASCII":
		return true
	}
	return false
}

// LIKE and SIMILAR TO ------------------------------------------------------------------

// likeMatcher matches a LIKE pattern, using plain string tests for the
// common shapes ('abc', 'abc%', '%abc', '%abc%') and a regexp otherwise.
type likeMatcher struct {
	kind int // 0 regexp, 1 equal, 2 prefix, 3 suffix, 4 contains
	lit  string
	re   *regexp.Regexp
}

func (m *likeMatcher) match(s string) bool {
	switch m.kind {
	case 1:
		return s == m.lit
	case 2:
		return strings.HasPrefix(s, m.lit)
	case 3:
		return strings.HasSuffix(s, m.lit)
	case 4:
		return strings.Contains(s, m.lit)
	}
	return m.re.MatchString(s)
}

func compileLike(pattern, escape string, hasEscape bool) (*likeMatcher, error) {
	var esc rune = -1
	if hasEscape {
		if utf8.RuneCountInString(escape) != 1 {
			return nil, fmt.Errorf("Invalid escape character '%s'", escape)
		}
		esc, _ = utf8.DecodeRuneInString(escape)
	}
	// Tokens: '%' and '_' wildcards (as runes 0 and 1 flags) and literal text.
	type tok struct {
		wild rune // '%' or '_' for wildcards, 0 for a literal
		lit  string
	}
	var toks []tok
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == esc:
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("Invalid escape sequence '%s', %d", pattern, i)
			}
			n := rs[i+1]
			if n != '%' && n != '_' && n != esc {
				return nil, fmt.Errorf("Invalid escape sequence '%s', %d", pattern, i)
			}
			toks = append(toks, tok{lit: string(n)})
			i++
		case r == '%' || r == '_':
			toks = append(toks, tok{wild: r})
		default:
			toks = append(toks, tok{lit: string(r)})
		}
	}
	// Merge adjacent literals.
	var merged []tok
	for _, t := range toks {
		if t.wild == 0 && len(merged) > 0 && merged[len(merged)-1].wild == 0 {
			merged[len(merged)-1].lit += t.lit
			continue
		}
		merged = append(merged, t)
	}
	lead := len(merged) > 0 && merged[0].wild == '%'
	trail := len(merged) > 0 && merged[len(merged)-1].wild == '%'
	core := merged
	if lead {
		core = core[1:]
	}
	if trail && len(core) > 0 {
		core = core[:len(core)-1]
	}
	switch {
	case len(core) == 0 && (lead || trail):
		return &likeMatcher{kind: 2}, nil // '%' matches everything: empty prefix
	case len(core) == 0:
		return &likeMatcher{kind: 1}, nil
	case len(core) == 1 && core[0].wild == 0:
		switch {
		case lead && trail:
			return &likeMatcher{kind: 4, lit: core[0].lit}, nil
		case lead:
			return &likeMatcher{kind: 3, lit: core[0].lit}, nil
		case trail:
			return &likeMatcher{kind: 2, lit: core[0].lit}, nil
		}
		return &likeMatcher{kind: 1, lit: core[0].lit}, nil
	}
	var re strings.Builder
	re.WriteString(`(?s)^`)
	for _, t := range merged {
		switch t.wild {
		case '%':
			re.WriteString(`.*`)
		case '_':
			re.WriteString(`.`)
		default:
			re.WriteString(regexp.QuoteMeta(t.lit))
		}
	}
	re.WriteString(`$`)
	c, err := regexp.Compile(re.String())
	if err != nil {
		return nil, err
	}
	return &likeMatcher{re: c}, nil
}

func buildLike(name string, args []Expr) (Expr, error) {
	form := "'<STRING> " + name + " <STRING> ESCAPE <STRING>'"
	if len(args) < 2 || len(args) > 3 {
		return nil, wrongArgCount(name, args, "2 to 3")
	}
	for _, a := range args {
		if !famString(a.Type()) {
			return nil, cannotApply(name, args, "<STRING> "+name+" <STRING>", strings.Trim(form, "'"))
		}
	}
	negate := name == "NOT LIKE"
	var fixed *likeMatcher
	constant := true
	var pat, esc types.Value
	var ok bool
	if pat, ok = LiteralValue(args[1]); !ok || pat.IsNull() {
		constant = false
	}
	if len(args) == 3 {
		if esc, ok = LiteralValue(args[2]); !ok || esc.IsNull() {
			constant = false
		}
	}
	if constant {
		m, err := compileLike(pat.S, esc.S, len(args) == 3)
		if err != nil {
			return nil, err
		}
		fixed = m
	}
	return newCall(name, args, types.BooleanType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		m := fixed
		if m == nil {
			var e string
			if len(v) == 3 {
				e = v[2].S
			}
			var err error
			if m, err = compileLike(v[1].S, e, len(v) == 3); err != nil {
				return types.Value{}, err
			}
		}
		return types.Bool(m.match(v[0].S) != negate), nil
	})), nil
}

// similarToRegex translates a SQL SIMILAR TO pattern into a Go regexp.
func similarToRegex(p, escape string, hasEscape bool) (string, error) {
	var esc rune = -1
	if hasEscape {
		if utf8.RuneCountInString(escape) != 1 {
			return "", fmt.Errorf("Invalid escape character '%s'", escape)
		}
		esc, _ = utf8.DecodeRuneInString(escape)
	}
	var b strings.Builder
	b.WriteString(`(?s)^(?:`)
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == esc:
			if i+1 >= len(rs) {
				return "", fmt.Errorf("Invalid escape sequence '%s', %d", p, i)
			}
			b.WriteString(regexp.QuoteMeta(string(rs[i+1])))
			i++
		case r == '%':
			b.WriteString(`.*`)
		case r == '_':
			b.WriteString(`.`)
		case strings.ContainsRune("|*+?{}()[]^-,0123456789", r):
			b.WriteRune(r)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	return b.String(), nil
}

func buildSimilar(name string, args []Expr) (Expr, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, wrongArgCount(name, args, "2 to 3")
	}
	for _, a := range args {
		if !famString(a.Type()) {
			return nil, cannotApply(name, args, "<STRING> "+name+" <STRING>", "<STRING> "+name+" <STRING> ESCAPE <STRING>")
		}
	}
	negate := name == "NOT SIMILAR TO"
	var fixed *regexp.Regexp
	if pat, ok := LiteralValue(args[1]); ok && !pat.IsNull() && len(args) == 2 {
		src, err := similarToRegex(pat.S, "", false)
		if err == nil {
			fixed, err = regexp.Compile(src)
		}
		if err != nil {
			return nil, fmt.Errorf("Invalid regular expression '%s': %w", pat.S, err)
		}
	}
	return newCall(name, args, types.BooleanType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		re := fixed
		if re == nil {
			var e string
			if len(v) == 3 {
				e = v[2].S
			}
			src, err := similarToRegex(v[1].S, e, len(v) == 3)
			if err == nil {
				re, err = regexp.Compile(src)
			}
			if err != nil {
				return types.Value{}, fmt.Errorf("Invalid regular expression '%s': %w", v[1].S, err)
			}
		}
		return types.Bool(re.MatchString(v[0].S) != negate), nil
	})), nil
}
