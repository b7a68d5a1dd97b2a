package image

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
)

// The hashmap image is one file:
//
//	header  : magic "FSQLHMAP" | format version uint32 BE | reserved uint32
//	records : uvarint len(key) | key | uvarint len(value) | value   (keys strictly ascending)
//	trailer : record count uint64 BE | CRC-32C of header and records uint32 BE | magic "FSQLHEND"
//
// The key of a record is the stored key (key-group prefix included).
const (
	hashmapMagic      = "FSQLHMAP"
	hashmapEndMagic   = "FSQLHEND"
	hashmapVersion    = 1
	hashmapHeaderLen  = 16
	hashmapTrailerLen = 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// digestWriter checksums what passes through it: CRC-32C for the image's own
// trailer, SHA-256 for the file's identity.
type digestWriter struct {
	w   io.Writer
	crc uint32
	sha hash.Hash
	n   int64
}

func (d *digestWriter) Write(p []byte) (int, error) {
	d.crc = crc32.Update(d.crc, castagnoli, p)
	d.sha.Write(p)
	n, err := d.w.Write(p)
	d.n += int64(n)
	return n, err
}

// sealChunk is how many records one encoding task handles.
const sealChunk = 16 << 10

// AppendHashmapRecord appends one record of a hashmap image.
func AppendHashmapRecord(buf []byte, key string, value []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(key)))
	buf = append(buf, key...)
	buf = binary.AppendUvarint(buf, uint64(len(value)))
	return append(buf, value...)
}

// WriteHashmap writes a hashmap image file of n records and returns its
// size and SHA-256. encode appends the records [lo, hi) in ascending key
// order to buf (with AppendHashmapRecord); it is called for consecutive
// chunks from several goroutines at once and must only read.
func WriteHashmap(path string, n int, encode func(buf []byte, lo, hi int) []byte) (int64, string, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	dw := &digestWriter{w: f, sha: sha256.New()}

	var hdr [hashmapHeaderLen]byte
	copy(hdr[:], hashmapMagic)
	binary.BigEndian.PutUint32(hdr[8:], hashmapVersion)
	if _, err := dw.Write(hdr[:]); err != nil {
		return 0, "", fmt.Errorf("writing %s: %w", path, err)
	}
	// Encoding follows references to entries scattered over the heap and is
	// bound by memory latency, so chunks are encoded in parallel; writing
	// and checksumming stay sequential, in key order.
	workers := runtime.GOMAXPROCS(0)
	bufs := make([][]byte, workers)
	for start := 0; start < n; start += workers * sealChunk {
		var wg sync.WaitGroup
		for w := range workers {
			lo := start + w*sealChunk
			if lo >= n {
				bufs[w] = bufs[w][:0]
				continue
			}
			hi := min(lo+sealChunk, n)
			wg.Add(1)
			go func() {
				defer wg.Done()
				bufs[w] = encode(bufs[w][:0], lo, hi)
			}()
		}
		wg.Wait()
		for _, b := range bufs {
			if _, err := dw.Write(b); err != nil {
				return 0, "", fmt.Errorf("writing %s: %w", path, err)
			}
		}
	}
	var tr [hashmapTrailerLen]byte
	binary.BigEndian.PutUint64(tr[:], uint64(n))
	binary.BigEndian.PutUint32(tr[8:], dw.crc)
	copy(tr[12:], hashmapEndMagic)
	if _, err := dw.Write(tr[:]); err != nil {
		return 0, "", fmt.Errorf("writing %s: %w", path, err)
	}
	// No fsync: the image only has to outlive the upload within this
	// process; durability comes from the checkpoint storage.
	if err := f.Close(); err != nil {
		return 0, "", fmt.Errorf("closing %s: %w", path, err)
	}
	return dw.n, hex.EncodeToString(dw.sha.Sum(nil)), nil
}

// ReadHashmap parses and verifies a hashmap image: begin receives the
// record count from the trailer before the first record, fn every record in
// key order. validKey rejects keys malformed for the reader's layout. The
// slices passed to fn point into data.
func ReadHashmap(data []byte, validKey func(key []byte) bool, begin func(count uint64), fn func(key, value []byte)) error {
	if len(data) < hashmapHeaderLen+hashmapTrailerLen {
		return fmt.Errorf("image truncated: %d bytes, a valid image has at least %d", len(data), hashmapHeaderLen+hashmapTrailerLen)
	}
	if string(data[:8]) != hashmapMagic {
		return fmt.Errorf("not a hashmap state image: starts with %q", PrefixOf(data, 16))
	}
	if v := binary.BigEndian.Uint32(data[8:]); v != hashmapVersion {
		return fmt.Errorf("unsupported hashmap image version %d (this build reads %d)", v, hashmapVersion)
	}
	trailer := data[len(data)-hashmapTrailerLen:]
	if string(trailer[12:]) != hashmapEndMagic {
		return fmt.Errorf("image truncated or corrupt: missing end marker (last bytes %q)", PrefixOf(trailer, 20))
	}
	body := data[:len(data)-hashmapTrailerLen]
	if want, got := binary.BigEndian.Uint32(trailer[8:]), crc32.Checksum(body, castagnoli); want != got {
		return fmt.Errorf("image corrupt: CRC-32C %08x, recorded %08x", got, want)
	}
	count := binary.BigEndian.Uint64(trailer)
	if count > uint64(len(body)) {
		return fmt.Errorf("image corrupt: record count %d exceeds its size", count)
	}
	begin(count)
	rest := body[hashmapHeaderLen:]
	var prev []byte
	n := uint64(0)
	for ; len(rest) > 0; n++ {
		off := len(body) - len(rest)
		key, r, err := readChunk(rest)
		if err != nil {
			return fmt.Errorf("record %d at offset %d: key: %w", n, off, err)
		}
		value, r, err := readChunk(r)
		if err != nil {
			return fmt.Errorf("record %d at offset %d: value: %w", n, off, err)
		}
		rest = r
		if !validKey(key) {
			return fmt.Errorf("record %d at offset %d: malformed key %q", n, off, PrefixOf(key, 32))
		}
		if prev != nil && bytes.Compare(prev, key) >= 0 {
			return fmt.Errorf("record %d at offset %d: key %q out of order", n, off, PrefixOf(key, 32))
		}
		prev = key
		fn(key, value)
	}
	if n != count {
		return fmt.Errorf("image corrupt: %d records, trailer says %d", n, count)
	}
	return nil
}

func readChunk(b []byte) (chunk, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, nil, errors.New("bad length prefix")
	}
	b = b[w:]
	if n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("length %d runs past the end (%d bytes left)", n, len(b))
	}
	return b[:n], b[n:], nil
}

// PrefixOf is b cut to at most n bytes, for error messages.
func PrefixOf(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// HashmapWriter writes a hashmap image record by record, for images too
// large to encode from memory (the entries of a savepoint). Keys must come
// in strictly ascending order.
type HashmapWriter struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	dw   *digestWriter
	n    uint64
	prev []byte
	buf  []byte
}

// CreateHashmap starts a hashmap image file at path.
func CreateHashmap(path string) (*HashmapWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &HashmapWriter{path: path, f: f, bw: bufio.NewWriterSize(f, 1<<20)}
	w.dw = &digestWriter{w: w.bw, sha: sha256.New()}
	var hdr [hashmapHeaderLen]byte
	copy(hdr[:], hashmapMagic)
	binary.BigEndian.PutUint32(hdr[8:], hashmapVersion)
	if _, err := w.dw.Write(hdr[:]); err != nil {
		w.Abort()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return w, nil
}

// Add appends a record; key must be greater than the previous one.
func (w *HashmapWriter) Add(key, value []byte) error {
	if w.n > 0 && bytes.Compare(w.prev, key) >= 0 {
		return fmt.Errorf("writing %s: key %q after %q: keys must ascend", w.path, PrefixOf(key, 32), PrefixOf(w.prev, 32))
	}
	w.prev = append(w.prev[:0], key...)
	w.buf = AppendHashmapRecord(w.buf[:0], string(key), value)
	if _, err := w.dw.Write(w.buf); err != nil {
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	w.n++
	return nil
}

// Count is the number of records added so far.
func (w *HashmapWriter) Count() uint64 { return w.n }

// Close writes the trailer and closes the file; it returns the file's size
// and SHA-256.
func (w *HashmapWriter) Close() (int64, string, error) {
	var tr [hashmapTrailerLen]byte
	binary.BigEndian.PutUint64(tr[:], w.n)
	binary.BigEndian.PutUint32(tr[8:], w.dw.crc)
	copy(tr[12:], hashmapEndMagic)
	_, err := w.dw.Write(tr[:])
	if err == nil {
		err = w.bw.Flush()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, "", fmt.Errorf("writing %s: %w", w.path, err)
	}
	return w.dw.n, hex.EncodeToString(w.dw.sha.Sum(nil)), nil
}

// Abort closes and removes an unfinished file.
func (w *HashmapWriter) Abort() {
	_ = w.f.Close()
	_ = os.Remove(w.path)
}

// ScanHashmapFile streams the records of the hashmap image file at path to
// fn in key order, without reading the whole file into memory. The CRC and
// record count are checked at the end: a caller must discard what fn built
// when it returns an error. Slices passed to fn are valid during the call.
func ScanHashmapFile(path string, fn func(key, value []byte) error) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size < hashmapHeaderLen+hashmapTrailerLen {
		return 0, fmt.Errorf("%s: image truncated: %d bytes, a valid image has at least %d", path, size, hashmapHeaderLen+hashmapTrailerLen)
	}
	br := bufio.NewReaderSize(io.LimitReader(f, size-hashmapTrailerLen), 1<<20)
	crc := uint32(0)
	var hdr [hashmapHeaderLen]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if string(hdr[:8]) != hashmapMagic {
		return 0, fmt.Errorf("%s: not a hashmap state image: starts with %q", path, PrefixOf(hdr[:], 16))
	}
	if v := binary.BigEndian.Uint32(hdr[8:]); v != hashmapVersion {
		return 0, fmt.Errorf("%s: unsupported hashmap image version %d (this build reads %d)", path, v, hashmapVersion)
	}
	crc = crc32.Update(crc, castagnoli, hdr[:])
	var key, value, prev, lenBuf []byte
	readChunk := func(dst []byte) ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		lenBuf = binary.AppendUvarint(lenBuf[:0], n)
		crc = crc32.Update(crc, castagnoli, lenBuf)
		if n > uint64(size) {
			return nil, fmt.Errorf("length %d runs past the end of the file", n)
		}
		dst = slices.Grow(dst[:0], int(n))[:n]
		if _, err := io.ReadFull(br, dst); err != nil {
			return nil, err
		}
		crc = crc32.Update(crc, castagnoli, dst)
		return dst, nil
	}
	n := uint64(0)
	for {
		if _, err := br.Peek(1); err == io.EOF {
			break
		}
		if key, err = readChunk(key); err != nil {
			return n, fmt.Errorf("%s: record %d: key: %w", path, n, err)
		}
		if value, err = readChunk(value); err != nil {
			return n, fmt.Errorf("%s: record %d: value: %w", path, n, err)
		}
		if n > 0 && bytes.Compare(prev, key) >= 0 {
			return n, fmt.Errorf("%s: record %d: key %q out of order", path, n, PrefixOf(key, 32))
		}
		prev = append(prev[:0], key...)
		if err := fn(key, value); err != nil {
			return n, err
		}
		n++
	}
	var tr [hashmapTrailerLen]byte
	if _, err := f.ReadAt(tr[:], size-hashmapTrailerLen); err != nil {
		return n, fmt.Errorf("%s: reading the trailer: %w", path, err)
	}
	if string(tr[12:]) != hashmapEndMagic {
		return n, fmt.Errorf("%s: image truncated or corrupt: missing end marker", path)
	}
	if want := binary.BigEndian.Uint32(tr[8:]); want != crc {
		return n, fmt.Errorf("%s: image corrupt: CRC-32C %08x, recorded %08x", path, crc, want)
	}
	if want := binary.BigEndian.Uint64(tr[:]); want != n {
		return n, fmt.Errorf("%s: image corrupt: %d records, trailer says %d", path, n, want)
	}
	return n, nil
}
