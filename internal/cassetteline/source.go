package cassetteline

import "io"

// Source is a cassette read for an index. Passed as the io.Reader of
// cassettes.NewReader, it makes the Reader check frame values only as
// Check says (Check may change between entries) and keep here where its
// lines are, which an index needs to read a frame back from the file.
// Its zero Check is [CheckValid], a public Reader's.
//
// A Source with More reads the files of a rotated recording (R the first
// part, More the others in order) as one stream: offsets are then in the
// texts of all the files end to end, and Files says where each file's
// text starts.
type Source struct {
	// R is the cassette's bytes, compressed or plain: the only file, or a
	// rotated recording's first part.
	R     io.Reader
	Check Check
	// Ahead decodes a compressed file's next block on a second goroutine
	// (see NewDecoder): for a reader that reads the whole file at once.
	Ahead bool
	// Borrow lets the Reader hand over lines it has not copied: an
	// entry's bytes (a frame's Data) are then valid only until the next
	// call of Next. For a reader that takes what it needs from each entry
	// at once, such as an index's, it saves a copy of every line.
	Borrow bool
	// More are a rotated recording's further parts, in order.
	More []Part

	// Set by the Reader as it reads:

	// Compressed says the file being read is in the compressed form.
	Compressed bool
	// File is the file the last line read is in: 0 for R, k for More[k-1].
	File int
	// Files holds, for each file started, where its text starts and its
	// form.
	Files []File
	// Off is how many bytes of text have been read.
	Off int64
	// LineOff and LineLen are where the last line read is in the text
	// form: its byte offset and its length without the newline.
	LineOff int64
	LineLen int
	// Base is, after a frame line, 1 + the 0-based number of the frame
	// of its interaction that the line is a delta against and copies
	// from (see [FrameExt]), 0 for a whole frame: what a random read of
	// the frame must rebuild first.
	Base int
	// Seeks are the compressed form's seek comments, in order, each at
	// the text offset it claims (whether its compressed offset is right
	// is for the index to check). Their Text is, as in the comment, an
	// offset in their own file's text: add Files[p.File].Start.
	Seeks []SeekPoint
}

// Part is one further file of a rotated recording.
type Part struct {
	R    io.Reader
	Name string
}

// File is what a Reader tells of a file it started reading.
type File struct {
	// Start is the offset of the file's text in the texts of all the
	// files end to end.
	Start      int64
	Compressed bool
}

// Read reads from R.
func (s *Source) Read(p []byte) (int, error) { return s.R.Read(p) }
