package mcptool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxResult bounds the text of one tool result (1 MiB); longer results are
// cut and say so.
const MaxResult = 1 << 20

// ErrToolFailed is wrapped by the error of a call whose result has isError.
var ErrToolFailed = errors.New("mcptool: the tool reported an error")

// Result returns the text a tool result gives the model: its structured
// content as JSON, when it has some, then its content — text as is, other
// content described in a line ("[image image/png, 1024 bytes]"), text that
// only repeats the structured content left out. A result with isError is
// an error wrapping [ErrToolFailed] with that text.
func Result(res *mcp.CallToolResult) (string, error) {
	if res == nil {
		return "", errors.New("mcptool: no result")
	}
	var parts []string
	var structured []byte
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", fmt.Errorf("mcptool: structured content: %w", err)
		}
		structured = b
		parts = append(parts, string(b))
	}
	for _, c := range res.Content {
		s := contentText(c)
		if structured != nil && sameJSON(structured, s) {
			continue
		}
		parts = append(parts, s)
	}
	out := strings.Join(parts, "\n")
	if len(out) > MaxResult {
		cut := MaxResult
		for cut > 0 && out[cut]&0xC0 == 0x80 {
			cut--
		}
		out = out[:cut] + "\n[result cut at " + strconv.Itoa(MaxResult) + " bytes]"
	}
	if res.IsError {
		if out == "" {
			out = "the tool failed without a message"
		}
		return "", fmt.Errorf("%w: %s", ErrToolFailed, out)
	}
	return out, nil
}

// contentText is one content item as text.
func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return "[image " + orUnknown(c.MIMEType) + ", " + strconv.Itoa(len(c.Data)) + " bytes]"
	case *mcp.AudioContent:
		return "[audio " + orUnknown(c.MIMEType) + ", " + strconv.Itoa(len(c.Data)) + " bytes]"
	case *mcp.ResourceLink:
		s := "[resource " + c.URI
		if c.Name != "" {
			s += " " + strconv.Quote(c.Name)
		}
		return s + "]"
	case *mcp.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil:
			return "[resource]"
		case r.Text != "":
			return r.Text
		}
		return "[resource " + r.URI + ", " + orUnknown(r.MIMEType) + ", " + strconv.Itoa(len(r.Blob)) + " bytes]"
	case nil:
		return ""
	}
	return fmt.Sprintf("[content %T]", c)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}

// sameJSON reports whether text is the JSON value b (in any spacing).
func sameJSON(b []byte, text string) bool {
	t := bytes.TrimSpace([]byte(text))
	if len(t) == 0 || !json.Valid(t) {
		return false
	}
	c, ok := canonical(t)
	if !ok {
		return false
	}
	d, ok := canonical(b)
	return ok && bytes.Equal(c, d)
}

// canonical re-encodes the JSON value b as encoding/json writes what it
// decoded (object keys sorted, no spacing); false when b is not JSON.
func canonical(b []byte) ([]byte, bool) {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	c, err := json.Marshal(v)
	return c, err == nil
}
