package mcptool_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/mcptool"
)

func TestResult(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, json, want, err string
	}{
		{"Text", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "a\nb", ""},
		{"StructuredRepeatedAsText", `{"content":[{"type":"text","text":"{\"n\": 1}"}],"structuredContent":{"n":1}}`, `{"n":1}`, ""},
		{"StructuredAndOtherText", `{"content":[{"type":"text","text":"note"}],"structuredContent":[1,2]}`, "[1,2]\nnote", ""},
		{"Image", `{"content":[{"type":"image","mimeType":"image/png","data":"AAAA"}]}`, "[image image/png, 3 bytes]", ""},
		{"Audio", `{"content":[{"type":"audio","mimeType":"","data":""}]}`, "[audio of unknown type, 0 bytes]", ""},
		{"Link", `{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}`, `[resource file:///a "a"]`, ""},
		{"Embedded", `{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"inside"}}]}`, "inside", ""},
		{"EmbeddedBlob", `{"content":[{"type":"resource","resource":{"uri":"file:///b","mimeType":"application/pdf","blob":"AAAA"}}]}`, "[resource file:///b, application/pdf, 3 bytes]", ""},
		{"Error", `{"content":[{"type":"text","text":"no such order"}],"isError":true}`, "", "no such order"},
		{"ErrorWithoutText", `{"content":[],"isError":true}`, "", "the tool failed without a message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var res mcp.CallToolResult
			if err := json.Unmarshal([]byte(tt.json), &res); err != nil {
				t.Fatal(err)
			}
			got, err := mcptool.Result(&res)
			if tt.err != "" {
				if !errors.Is(err, mcptool.ErrToolFailed) || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("Result = %q, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Result = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	big := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("é", mcptool.MaxResult)}}}
	got, err := mcptool.Result(big)
	if err != nil || len(got) > mcptool.MaxResult+64 || !strings.HasSuffix(got, "[result cut at 1048576 bytes]") {
		t.Errorf("a large result: %d bytes, %v", len(got), err)
	}
}

// FuzzResult decodes arbitrary bytes as a server's tool result, as the SDK
// does, and maps it: never a panic, never more than MaxResult and a note.
func FuzzResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a"}]}`,
		`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1}}`,
		`{"content":[{"type":"image","mimeType":"image/png","data":"AAAA"}],"isError":true}`,
		`{"content":[{"type":"resource","resource":{"uri":"u","blob":"AA=="}}]}`,
		`{"content":[{"type":"resource_link","uri":"u"}],"structuredContent":null}`,
		`{"content":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res mcp.CallToolResult
		if json.Unmarshal(data, &res) != nil {
			return
		}
		out, err := mcptool.Result(&res)
		if err != nil && !errors.Is(err, mcptool.ErrToolFailed) && res.StructuredContent == nil {
			t.Fatalf("error %v", err)
		}
		if len(out) > mcptool.MaxResult+64 {
			t.Fatalf("%d bytes", len(out))
		}
	})
}
