package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"sort"

	"github.com/klauspost/compress/zstd"
	"github.com/rogpeppe/go-internal/txtar"
)

// hostPlaceholder stands in the snapshot for the address the captured
// server advertised in serverAddressByClientCIDRs (an ephemeral loopback
// port); [Docs.Answer] puts the request's host in its place.
const hostPlaceholder = "kwrec.request.host.invalid"

// typesName is the archive file that maps every other file's name to the
// Content-Type the server sent it with. Its leading underscore keeps it
// apart from the paths, which start with a letter.
const typesName = "_content-types.json"

// encodeArchive writes files (archive name -> body) as a txtar archive,
// sorted by name, with their content types (name -> Content-Type) in the
// typesName file, compressed with zstd. The window covers the whole archive
// because the OpenAPI documents repeat each other's schemas (every group
// version carries meta/v1): a long window is what makes the snapshot small.
func encodeArchive(comment string, files map[string][]byte, types map[string]string) ([]byte, error) {
	tj, err := json.MarshalIndent(types, "", "\t")
	if err != nil {
		return nil, err
	}
	files = maps.Clone(files)
	files[typesName] = append(tj, '\n')
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	a := &txtar.Archive{Comment: []byte(comment)}
	for _, n := range names {
		a.Files = append(a.Files, txtar.File{Name: n, Data: files[n]})
	}
	raw := txtar.Format(a)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression),
		zstd.WithWindowSize(32<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	return enc.EncodeAll(raw, nil), nil
}

// decodeArchive reads what [encodeArchive] wrote: archive name -> body and
// archive name -> Content-Type.
func decodeArchive(compressed []byte) (files map[string][]byte, types map[string]string, err error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return nil, nil, err
	}
	defer dec.Close()
	raw, err := dec.DecodeAll(compressed, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("decompressing: %w", err)
	}
	a := txtar.Parse(raw)
	files = make(map[string][]byte, len(a.Files))
	for _, f := range a.Files {
		if _, dup := files[f.Name]; dup {
			return nil, nil, fmt.Errorf("%s appears twice in the archive", f.Name)
		}
		// Clipped: an append by a caller must not run into the next file.
		files[f.Name] = f.Data[:len(f.Data):len(f.Data)]
	}
	tj, ok := files[typesName]
	if !ok {
		return nil, nil, fmt.Errorf("no %s in the archive", typesName)
	}
	delete(files, typesName)
	if err := json.Unmarshal(tj, &types); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", typesName, err)
	}
	for n := range files {
		if _, ok := types[n]; !ok {
			return nil, nil, fmt.Errorf("%s has no content type in %s", n, typesName)
		}
	}
	return files, types, nil
}

// withHost returns body with the host placeholder replaced by host, quoted
// for a JSON string; body itself when it holds no placeholder.
func withHost(body []byte, host string) []byte {
	if !bytes.Contains(body, []byte(hostPlaceholder)) {
		return body
	}
	if host == "" {
		host = "localhost"
	}
	q, _ := jsonString(host)
	return bytes.ReplaceAll(body, []byte(hostPlaceholder), q)
}
