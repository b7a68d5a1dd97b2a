package parser

import "strings"

// SplitStatements splits src on top-level ';' and returns the text of each
// complete statement (without the ';', trimmed of surrounding whitespace and
// comments) and the remaining text after the last ';' when it still contains
// something other than whitespace and comments (an incomplete statement);
// rest is "" otherwise. Semicolons inside strings, quoted identifiers,
// comments and EXECUTE STATEMENT SET BEGIN ... END blocks do not split.
// SplitStatements never fails: text it cannot tokenize is kept as is.
func SplitStatements(src string) (complete []string, rest string) {
	l := newLexer(src)
	stmtStart := -1 // byte offset of the first token of the current statement
	lastEnd := 0
	inBlock := false
	caseDepth := 0
	var words []string // last few upper-cased words, for block detection
	for {
		t := l.next()
		if t.kind == tokEOF {
			break
		}
		if t.kind == tokError && t.incomplete {
			// Unterminated string, identifier or comment: the statement is
			// not complete yet.
			if stmtStart < 0 {
				stmtStart = t.pos.Offset
			}
			return complete, src[stmtStart:]
		}
		if t.kind == tokError && t.end <= t.pos.Offset {
			// defensive: never loop without progress
			break
		}
		if t.kind == tokOp && t.val == ";" && !inBlock {
			if stmtStart >= 0 {
				complete = append(complete, strings.TrimSpace(src[stmtStart:lastEnd]))
			}
			stmtStart = -1
			words = words[:0]
			continue
		}
		if stmtStart < 0 {
			stmtStart = t.pos.Offset
		}
		lastEnd = t.end
		if t.kind == tokWord {
			switch t.val {
			case "CASE":
				if inBlock {
					caseDepth++
				}
			case "END":
				if inBlock {
					if caseDepth > 0 {
						caseDepth--
					} else {
						inBlock = false
					}
				}
			case "BEGIN":
				if n := len(words); !inBlock && n >= 2 && words[n-2] == "STATEMENT" && words[n-1] == "SET" {
					inBlock = true
					caseDepth = 0
				}
			}
			if len(words) < 8 {
				words = append(words, t.val)
			} else {
				copy(words, words[1:])
				words[len(words)-1] = t.val
			}
		} else if len(words) < 8 {
			words = append(words, "")
		} else {
			copy(words, words[1:])
			words[len(words)-1] = ""
		}
	}
	if stmtStart >= 0 {
		rest = src[stmtStart:]
	}
	return complete, rest
}
