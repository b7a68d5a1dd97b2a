package parser

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pos is a 1-based line and column (column counts runes) plus 0-based byte
// offset into the source.
type Pos struct{ Line, Col, Offset int }

// String renders the position as "line L, column C".
func (p Pos) String() string { return fmt.Sprintf("line %d, column %d", p.Line, p.Col) }

type tokKind int

const (
	tokEOF    tokKind = iota
	tokWord           // unquoted identifier or keyword
	tokQuoted         // back-quoted identifier
	tokString         // 'string literal'
	tokBinary         // X'0A1B'
	tokNumber         // numeric literal
	tokOp             // operator or punctuation
	tokError          // lexical error
)

type token struct {
	kind tokKind
	text string // raw source text
	val  string // identifier value (unquoted), string contents (unescaped), or upper-cased word
	pos  Pos
	end  int // byte offset just past the token

	// for tokError
	msg        string
	incomplete bool // unterminated string, identifier or comment (more input could fix it)
}

// upper returns the upper-cased word for tokWord, "" otherwise.
func (t *token) upper() string {
	if t.kind == tokWord {
		return t.val
	}
	return ""
}

type lexer struct {
	src    string
	off    int
	line   int
	col    int
	inHint bool // between /*+ and */: the hint's text is lexed as tokens
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1, col: 1} }

func (l *lexer) pos() Pos { return Pos{Line: l.line, Col: l.col, Offset: l.off} }

// advance moves past one rune.
func (l *lexer) advance() {
	if l.off >= len(l.src) {
		return
	}
	r, size := utf8.DecodeRuneInString(l.src[l.off:])
	l.off += size
	if r == '\n' {
		l.line++
		l.col = 1
	} else {
		l.col++
	}
}

func (l *lexer) peekByte(n int) byte {
	if l.off+n < len(l.src) {
		return l.src[l.off+n]
	}
	return 0
}

func isIdentStart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r)
}

func isIdentPart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// skipSpace skips whitespace and comments. It returns an error token for an
// unterminated block comment.
func (l *lexer) skipSpace() *token {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.advance()
		case c == '-' && l.peekByte(1) == '-':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance()
			}
		case c == '/' && l.peekByte(1) == '*' && l.peekByte(2) == '+':
			// A hint (/*+ … */) is not a comment: next returns it as tokens.
			return nil
		case c == '/' && l.peekByte(1) == '*':
			start := l.pos()
			l.advance()
			l.advance()
			closed := false
			for l.off < len(l.src) {
				if l.src[l.off] == '*' && l.peekByte(1) == '/' {
					l.advance()
					l.advance()
					closed = true
					break
				}
				l.advance()
			}
			if !closed {
				return &token{kind: tokError, pos: start, end: l.off, text: l.src[start.Offset:l.off], incomplete: true,
					msg: fmt.Sprintf("Lexical error at %s. Unterminated comment", start)}
			}
		default:
			r, _ := utf8.DecodeRuneInString(l.src[l.off:])
			if unicode.IsSpace(r) {
				l.advance()
				continue
			}
			return nil
		}
	}
	return nil
}

// next returns the next token. At the end of input it returns tokEOF
// (repeatedly).
func (l *lexer) next() token {
	if errTok := l.skipSpace(); errTok != nil {
		return *errTok
	}
	start := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tokEOF, pos: start, end: l.off, text: "<EOF>"}
	}
	c := l.src[l.off]
	mk := func(kind tokKind, val string) token {
		return token{kind: kind, pos: start, end: l.off, text: l.src[start.Offset:l.off], val: val}
	}
	switch {
	case (c == 'x' || c == 'X') && l.peekByte(1) == '\'':
		l.advance()
		s, errTok := l.quoted('\'', start)
		if errTok != nil {
			return *errTok
		}
		for _, r := range s {
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return token{kind: tokError, pos: start, end: l.off, text: l.src[start.Offset:l.off],
					msg: fmt.Sprintf("Binary literal string must contain only characters '0' - '9', 'A' - 'F' (at %s)", start)}
			}
		}
		return mk(tokBinary, s)
	case c == '\'':
		s, errTok := l.quoted('\'', start)
		if errTok != nil {
			return *errTok
		}
		return mk(tokString, s)
	case c == '`':
		s, errTok := l.quoted('`', start)
		if errTok != nil {
			return *errTok
		}
		if s == "" {
			return token{kind: tokError, pos: start, end: l.off, text: l.src[start.Offset:l.off],
				msg: fmt.Sprintf("Lexical error at %s. Empty quoted identifier", start)}
		}
		return mk(tokQuoted, s)
	case c == '"':
		_, errTok := l.quoted('"', start)
		if errTok != nil {
			return *errTok
		}
		return token{kind: tokError, pos: start, end: l.off, text: l.src[start.Offset:l.off],
			msg: fmt.Sprintf("Lexical error at %s. Encountered %s: double-quoted identifiers are not supported; use backticks (`name`) for identifiers and single quotes for strings", start, l.src[start.Offset:l.off])}
	case isDigit(c) || (c == '.' && isDigit(l.peekByte(1))):
		return l.number(start)
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.off:])
	if isIdentStart(r) {
		for l.off < len(l.src) {
			r, _ := utf8.DecodeRuneInString(l.src[l.off:])
			if !isIdentPart(r) {
				break
			}
			l.advance()
		}
		t := mk(tokWord, "")
		t.val = strings.ToUpper(t.text)
		return t
	}
	// operators
	if strings.HasPrefix(l.src[l.off:], "/*+") {
		l.advance()
		l.advance()
		l.advance()
		l.inHint = true
		return mk(tokOp, "/*+")
	}
	two := ""
	if l.off+1 < len(l.src) {
		two = l.src[l.off : l.off+2]
	}
	if two == "*/" && l.inHint {
		l.advance()
		l.advance()
		l.inHint = false
		return mk(tokOp, "*/")
	}
	switch two {
	case "<>", "!=", "<=", ">=", "||", "=>":
		l.advance()
		l.advance()
		return mk(tokOp, two)
	}
	switch c {
	case '+', '-', '*', '/', '%', '=', '<', '>', '(', ')', ',', '.', ';', '[', ']', ':', '?', '{', '}', '|':
		l.advance()
		return mk(tokOp, string(c))
	}
	l.advance()
	t := mk(tokError, "")
	t.msg = fmt.Sprintf("Lexical error at %s. Encountered: %q", start, t.text)
	return t
}

// quoted scans a quoted sequence starting at the current quote character;
// a doubled quote stands for one quote character.
func (l *lexer) quoted(q byte, start Pos) (string, *token) {
	l.advance() // opening quote
	var sb strings.Builder
	for {
		if l.off >= len(l.src) {
			what := l.src[start.Offset:l.off]
			return "", &token{kind: tokError, pos: start, end: l.off, text: what, incomplete: true,
				msg: fmt.Sprintf("Lexical error at %s.  Encountered: <EOF> after : %q", start, what)}
		}
		c := l.src[l.off]
		if c == q {
			if l.peekByte(1) == q {
				sb.WriteByte(q)
				l.advance()
				l.advance()
				continue
			}
			l.advance()
			return sb.String(), nil
		}
		r, size := utf8.DecodeRuneInString(l.src[l.off:])
		if r == utf8.RuneError && size == 1 {
			sb.WriteByte(c)
		} else {
			sb.WriteRune(r)
		}
		l.advance()
	}
}

func (l *lexer) number(start Pos) token {
	for isDigit(l.peekByte(0)) {
		l.advance()
	}
	if l.peekByte(0) == '.' && !(l.peekByte(1) == '.') {
		l.advance()
		for isDigit(l.peekByte(0)) {
			l.advance()
		}
	}
	if e := l.peekByte(0); e == 'e' || e == 'E' {
		n := 1
		if s := l.peekByte(1); s == '+' || s == '-' {
			n = 2
		}
		if isDigit(l.peekByte(n)) {
			for i := 0; i < n; i++ {
				l.advance()
			}
			for isDigit(l.peekByte(0)) {
				l.advance()
			}
		}
	}
	t := token{kind: tokNumber, pos: start, end: l.off, text: l.src[start.Offset:l.off]}
	t.val = t.text
	return t
}

// tokenize lexes the whole source. The returned slice always ends with a
// tokEOF token. The first lexical error, if any, is returned as well.
func tokenize(src string) ([]token, *Error) {
	l := newLexer(src)
	toks := make([]token, 0, len(src)/4+1)
	for {
		t := l.next()
		if t.kind == tokError {
			return nil, &Error{Pos: t.pos, Msg: t.msg}
		}
		toks = append(toks, t)
		if t.kind == tokEOF {
			return toks, nil
		}
	}
}
