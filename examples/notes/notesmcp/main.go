// Command notesmcp is the MCP server of the notes example
// (examples/notes/network.yaml): a notebook kept in memory, spoken to over
// MCP on its standard input and output. The network file starts it with
// `go run ./notesmcp`, so it is built from source wherever the example
// runs; it lives as long as the process that runs the network (baton run,
// chat, serve or worker).
//
// Its tools: list_notes and search_notes (read-only), add_note (not
// idempotent: a crash mid-call is never followed by a second note),
// delete_note (the network file asks a person's approval first). The
// notebook starts with two notes, N1 and N2; new notes are numbered on.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Note is a note of the notebook.
type Note struct {
	ID   string `json:"id" jsonschema:"the note's id, N1, N2, …"`
	Text string `json:"text" jsonschema:"the note"`
}

// notebook is the notes, in the order they were added.
type notebook struct {
	mu    sync.Mutex
	notes []Note
	next  int
}

func newNotebook() *notebook {
	return &notebook{next: 3, notes: []Note{
		{ID: "N1", Text: "Renew the passport before March."},
		{ID: "N2", Text: "The team offsite is on 14 May in Lyon."},
	}}
}

type addIn struct {
	Text string `json:"text" jsonschema:"what to note, one sentence"`
}

type searchIn struct {
	Query string `json:"query" jsonschema:"words to look for, case-insensitive"`
}

type deleteIn struct {
	ID string `json:"id" jsonschema:"the id of the note to delete"`
}

type none struct{}

// notesOut is the structured result of list_notes and search_notes.
type notesOut struct {
	Notes []Note `json:"notes"`
}

func (b *notebook) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "baton-notes", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "list_notes", Description: "List every note, oldest first.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, notesOut, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			return nil, notesOut{Notes: append([]Note{}, b.notes...)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "search_notes", Description: "Find the notes that contain all the words of a query.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, notesOut, error) {
			words := strings.Fields(strings.ToLower(in.Query))
			if len(words) == 0 {
				return nil, notesOut{}, errors.New("query is empty: give a word to look for")
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			out := notesOut{Notes: []Note{}}
			for _, n := range b.notes {
				if containsAll(strings.ToLower(n.Text), words) {
					out.Notes = append(out.Notes, n)
				}
			}
			return nil, out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Add a note; answers its id."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, Note, error) {
			text := strings.TrimSpace(in.Text)
			if text == "" {
				return nil, Note{}, errors.New("text is empty: say what to note")
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			n := Note{ID: fmt.Sprintf("N%d", b.next), Text: text}
			b.next++
			b.notes = append(b.notes, n)
			return nil, n, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_note", Description: "Delete a note by its id.", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(_ context.Context, _ *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			for i, n := range b.notes {
				if n.ID == in.ID {
					b.notes = append(b.notes[:i], b.notes[i+1:]...)
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + n.ID + ": " + n.Text}}}, nil, nil
				}
			}
			return nil, nil, fmt.Errorf("there is no note %q", in.ID)
		})
	return s
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

func main() {
	log.SetFlags(0)
	log.SetPrefix("notesmcp: ")
	err := newNotebook().server().Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "EOF") {
		log.Fatal(err)
	}
	os.Exit(0)
}
