package discovery

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArchiveRoundTrip(t *testing.T) {
	files := map[string][]byte{
		"api":            []byte(`{"kind":"APIVersions","serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"` + hostPlaceholder + `"}]}` + "\n"),
		"openapi/v3":     []byte(`{"paths":{}}` + "\n"),
		"aggregated/api": []byte("{}\n"),
	}
	types := map[string]string{"api": jsonContentType, "openapi/v3": "text/plain; charset=utf-8", "aggregated/api": aggregatedContentType}
	b, err := encodeArchive("a comment\n", files, types)
	if err != nil {
		t.Fatal(err)
	}
	gotFiles, gotTypes, err := decodeArchive(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, gotFiles); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(types, gotTypes); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	// And the decoded archive encodes to the same bytes: the format is
	// deterministic, so a regenerated snapshot differs only where the
	// server's documents do.
	again, err := encodeArchive("a comment\n", gotFiles, gotTypes)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(b) {
		t.Error("encoding the decoded archive gave other bytes")
	}
}

func TestDecodeArchiveRejects(t *testing.T) {
	typed, err := encodeArchive("", map[string][]byte{"api": []byte("{}\n")}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"bytes that are not zstd", []byte("not zstd"), "decompressing: invalid input: magic number mismatch"},
		{"a file without a content type", typed, "api has no content type in _content-types.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := decodeArchive(tt.data); err == nil || err.Error() != tt.wantErr {
				t.Errorf("decodeArchive: %v, want %s", err, tt.wantErr)
			}
		})
	}
}

func TestWithHostQuotesTheHost(t *testing.T) {
	body := []byte(`{"serverAddress":"` + hostPlaceholder + `"}`)
	if got, want := string(withHost(body, `a"b:1`)), `{"serverAddress":"a\"b:1"}`; got != want {
		t.Errorf("withHost: %s, want %s", got, want)
	}
}
