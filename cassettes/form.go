package cassettes

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

type plainReader struct {
	io.Reader
	dec *zstd.Decoder
}

func (p *plainReader) Close() error {
	if p.dec != nil {
		p.dec.Close()
	}
	return nil
}

// IsCompressed reports whether data starts like the compressed form (zstd's
// magic bytes), the test every reader here uses.
func IsCompressed(data []byte) bool { return bytes.HasPrefix(data, zstdMagic) }

// Plain returns the text form of the cassette bytes in r, decompressing
// them when they start with zstd's magic bytes and passing them through
// otherwise. It does not parse the cassette (kwrec cat and textconv use it
// to show even a broken one).
func Plain(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(4)
	if !IsCompressed(magic) {
		return &plainReader{Reader: br}, nil
	}
	dec, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return nil, fmt.Errorf("cassette: zstd: %w", err)
	}
	return &plainReader{Reader: dec, dec: dec}, nil
}

// Compress writes src, the text form, to dst as the compressed form,
// byte for byte: decompressing the result gives src back.
func Compress(dst io.Writer, src io.Reader) error {
	enc, err := zstd.NewWriter(dst, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("cassette: zstd: %w", err)
	}
	if _, err := io.Copy(enc, src); err != nil {
		enc.Close()
		return fmt.Errorf("cassette: compressing: %w", err)
	}
	return enc.Close()
}
