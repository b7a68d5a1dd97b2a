package shell

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"sync/atomic"
)

// Bracketed paste. The line editor inserts and redraws character by
// character: pasting a 20 KB statement on one line redrew the whole line
// 20 000 times (minutes of output). In bracketed-paste mode the terminal
// wraps pasted text in markers; pasteReader takes the text between them
// out of the editor's input, and readlineReader hands it to the REPL loop
// line by line, in one piece, as if it had been typed.
const (
	pasteModeOn  = "\x1b[?2004h"
	pasteModeOff = "\x1b[?2004l"
	pasteStart   = "\x1b[200~"
	pasteEnd     = "\x1b[201~"
	// pasteMark ends a paste in the editor's input: a line feed (Ctrl-J),
	// which the editor takes as Enter (and waits after, like after Enter)
	// while a terminal in raw mode sends Enter as a carriage return. The
	// editor's rune filter counts them, so that the line a paste ends is
	// known.
	pasteMark = '\n'
)

// pasteReader sits between the terminal and the line editor. Outside
// pastes it passes the input through; a paste is kept aside and replaced by
// pasteMark, so that the editor returns the line typed before it and the
// REPL loop collects the paste (take).
type pasteReader struct {
	in io.Reader

	mu      sync.Mutex
	raw     []byte // read, not yet classified
	out     []byte // for the editor
	paste   []byte // the paste being read
	inPaste bool
	pastes  []string // complete pastes, oldest first
	buf     []byte
	// marks counts the pasteMarks the editor has consumed.
	marks atomic.Int64
}

// filterRune is the editor's FuncFilterInputRune: it counts pasteMarks.
func (p *pasteReader) filterRune(r rune) (rune, bool) {
	if r == pasteMark {
		p.marks.Add(1)
	}
	return r, true
}

func newPasteReader(in io.Reader) *pasteReader {
	return &pasteReader{in: in, buf: make([]byte, 32<<10)}
}

// Read implements io.Reader for the line editor.
func (p *pasteReader) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if len(p.out) > 0 {
			n := copy(b, p.out)
			p.out = p.out[n:]
			p.mu.Unlock()
			return n, nil
		}
		p.mu.Unlock()
		n, err := p.in.Read(p.buf)
		p.mu.Lock()
		p.raw = append(p.raw, p.buf[:n]...)
		p.classify(err != nil)
		p.mu.Unlock()
		if err != nil {
			p.mu.Lock()
			pending := len(p.out) > 0
			p.mu.Unlock()
			if pending {
				continue
			}
			return 0, err
		}
	}
}

// classify moves p.raw into p.out or p.paste. A marker split across reads
// is kept in raw until the rest arrives (or the input ends).
func (p *pasteReader) classify(eof bool) {
	for len(p.raw) > 0 {
		marker := pasteStart
		if p.inPaste {
			marker = pasteEnd
		}
		i := bytes.Index(p.raw, []byte(marker))
		if i < 0 {
			keep := 0
			if !eof {
				keep = partialSuffix(p.raw, marker)
			}
			p.emit(p.raw[:len(p.raw)-keep])
			p.raw = append(p.raw[:0], p.raw[len(p.raw)-keep:]...)
			return
		}
		p.emit(p.raw[:i])
		p.raw = append(p.raw[:0], p.raw[i+len(marker):]...)
		if p.inPaste {
			p.pastes = append(p.pastes, string(p.paste))
			p.paste = p.paste[:0]
			p.out = append(p.out, pasteMark)
		}
		p.inPaste = !p.inPaste
	}
}

func (p *pasteReader) emit(b []byte) {
	if p.inPaste {
		p.paste = append(p.paste, b...)
	} else {
		p.out = append(p.out, b...)
	}
}

// take returns the oldest complete paste.
func (p *pasteReader) take() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pastes) == 0 {
		return "", false
	}
	s := p.pastes[0]
	p.pastes = p.pastes[1:]
	return s, true
}

// partialSuffix is the length of the longest end of b that begins marker.
func partialSuffix(b []byte, marker string) int {
	for k := min(len(b), len(marker)-1); k > 0; k-- {
		if bytes.HasSuffix(b, []byte(marker[:k])) {
			return k
		}
	}
	return 0
}

// pastedLines splits a line typed before a paste plus the paste into the
// lines it completes and the unfinished rest. Terminals send pasted line
// breaks as carriage returns.
func pastedLines(typed, paste string) (complete []string, rest string) {
	text := strings.ReplaceAll(typed+paste, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	parts := strings.Split(text, "\n")
	return parts[:len(parts)-1], parts[len(parts)-1]
}
