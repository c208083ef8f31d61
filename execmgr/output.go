package execmgr

import (
	"io"
	"strconv"
	"unsafe"

	"appserver/jsonrpc/jsonstr"
)

// Output is a command's captured stream, kept in the blocks it was read into: it is never copied while
// it grows, and a large one is encoded to the wire a piece at a time (CommandExecResponse.WriteJSON)
// rather than joined. The zero value is empty.
type Output struct {
	blocks [][]byte
	n      int
}

const (
	outputFirstBlock = 4 << 10 // most outputs are small
	outputBlock      = 1 << 20
)

// OutputOf returns an Output holding s.
func OutputOf(s string) Output {
	var o Output
	o.write([]byte(s))
	return o
}

// write appends p, filling the last block before starting a new one (so the blocks depend only on the
// bytes, not on how they were read).
func (o *Output) write(p []byte) {
	o.n += len(p)
	for len(p) > 0 {
		if len(o.blocks) == 0 || len(o.blocks[len(o.blocks)-1]) == cap(o.blocks[len(o.blocks)-1]) {
			size := outputBlock
			if len(o.blocks) == 0 {
				size = outputFirstBlock
			}
			o.blocks = append(o.blocks, make([]byte, 0, size))
		}
		last := &o.blocks[len(o.blocks)-1]
		k := min(cap(*last)-len(*last), len(p))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
}

// Len returns the number of bytes held.
func (o Output) Len() int { return o.n }

// String returns the bytes as one string (a copy when they span more than one block).
func (o Output) String() string {
	switch len(o.blocks) {
	case 0:
		return ""
	case 1:
		return unsafe.String(unsafe.SliceData(o.blocks[0]), len(o.blocks[0])) // blocks are never changed once written
	}
	out := make([]byte, 0, o.n)
	for _, b := range o.blocks {
		out = append(out, b...)
	}
	return unsafe.String(unsafe.SliceData(out), len(out))
}

// MarshalJSON encodes the bytes as a JSON string, as AppendJSON does (invalid UTF-8 becomes \ufffd).
func (o Output) MarshalJSON() ([]byte, error) { return o.appendJSON(nil), nil }

func (o Output) appendJSON(b []byte) []byte {
	if len(o.blocks) <= 1 {
		var s []byte
		if len(o.blocks) == 1 {
			s = o.blocks[0]
		}
		return jsonstr.Append(b, s)
	}
	var e jsonstr.Encoder
	b = e.Begin(b)
	for _, blk := range o.blocks {
		b = e.Write(b, blk)
	}
	return e.End(b)
}

// Streaming a large response: encode writePiece bytes at a time into a buffer written out once it
// holds writeFlush bytes, so each write is large and the buffer stays small (NULs take 6 bytes each).
const (
	writePiece = 32 << 10
	writeFlush = 128 << 10
	writeBuf   = writeFlush + 6*(writePiece+utf8Max) + 64
	utf8Max    = 4
)

// writeJSON appends the bytes as a JSON string to buf, writing buf to w whenever it fills, and returns
// what is left in buf.
func (o Output) writeJSON(w io.Writer, buf []byte) ([]byte, error) {
	var e jsonstr.Encoder
	buf = e.Begin(buf)
	for _, blk := range o.blocks {
		for len(blk) > 0 {
			k := min(len(blk), writePiece)
			buf = e.Write(buf, blk[:k])
			blk = blk[k:]
			if len(buf) >= writeFlush {
				if _, err := w.Write(buf); err != nil {
					return buf[:0], err
				}
				buf = buf[:0]
			}
		}
	}
	return e.End(buf), nil
}

// largeResponse is the output size from which a command/exec reply is written in pieces (Large).
const largeResponse = 1 << 20

// Large reports whether the response holds enough output to be written in pieces (WriteJSON, with
// jsonrpc.Streamed) rather than encoded whole (AppendJSON).
func (r CommandExecResponse) Large() bool { return r.Stdout.Len()+r.Stderr.Len() >= largeResponse }

// AppendJSON appends the response's JSON, byte for byte as encoding/json writes it (encoding/json
// escapes control bytes very slowly: a 64 MiB output of NUL bytes took 17 s).
func (r CommandExecResponse) AppendJSON(b []byte) []byte {
	b = append(b, `{"exitCode":`...)
	b = strconv.AppendInt(b, int64(r.ExitCode), 10)
	b = append(b, `,"stdout":`...)
	b = r.Stdout.appendJSON(b)
	b = append(b, `,"stderr":`...)
	b = r.Stderr.appendJSON(b)
	return append(b, '}')
}

// WriteJSON writes what AppendJSON appends to w, in writes of 128 KiB or more, never holding more than
// a few hundred KiB of it: a buffered 256 MiB output of NUL bytes is 1.5 GiB of JSON.
func (r CommandExecResponse) WriteJSON(w io.Writer) error {
	buf := make([]byte, 0, writeBuf)
	buf = append(buf, `{"exitCode":`...)
	buf = strconv.AppendInt(buf, int64(r.ExitCode), 10)
	buf = append(buf, `,"stdout":`...)
	buf, err := r.Stdout.writeJSON(w, buf)
	if err != nil {
		return err
	}
	buf = append(buf, `,"stderr":`...)
	if buf, err = r.Stderr.writeJSON(w, buf); err != nil {
		return err
	}
	_, err = w.Write(append(buf, '}'))
	return err
}
