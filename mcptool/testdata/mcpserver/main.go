// Command mcpserver is the MCP server of package mcptool's tests: on its
// standard input and output by default, or on streamable HTTP with -http
// ADDR (it prints "listening on http://ADDR/mcp"; with MCP_TOKEN set, a
// request without "Authorization: Bearer $MCP_TOKEN" is refused).
//
// Its tools: echo (read-only), add (structured, idempotent), fail (an
// error result), picture (an image), append (appends a line to the file
// $MCP_LOG, not idempotent; wait_ms waits first), append_first (the same,
// but the line is written first and wait_ms waited after), crash (exits during the
// call), crash_once (idempotent: exits during the call if the file
// $MCP_CRASH_ONCE exists, removing it first), secret (the value of
// $MCP_SECRET).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type text struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type pair struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sum struct {
	Sum int `json:"sum"`
}

type line struct {
	Line   string `json:"line"`
	WaitMS int    `json:"wait_ms,omitempty"`
}

type none struct{}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// appendLine appends a line to the file $MCP_LOG.
func appendLine(line string) error {
	f, err := os.OpenFile(os.Getenv("MCP_LOG"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptool-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in text) (*mcp.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers.", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in pair) (*mcp.CallToolResult, sum, error) {
			return nil, sum{in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("it failed, as it always does")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "picture", Description: "A picture.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here it is"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG....")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "append", Description: "Append a line to the log."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in line) (*mcp.CallToolResult, any, error) {
			if in.WaitMS > 0 {
				select {
				case <-time.After(time.Duration(in.WaitMS) * time.Millisecond):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			}
			if err := appendLine(in.Line); err != nil {
				return nil, nil, err
			}
			return textResult("appended " + in.Line), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "append_first", Description: "Append a line to the log, then wait."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in line) (*mcp.CallToolResult, any, error) {
			if err := appendLine(in.Line); err != nil {
				return nil, nil, err
			}
			select {
			case <-time.After(time.Duration(in.WaitMS) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return textResult("appended " + in.Line), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits during the call."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash_once", Description: "Exits during its first call.", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			if p := os.Getenv("MCP_CRASH_ONCE"); p != "" {
				if os.Remove(p) == nil {
					os.Exit(3)
				}
			}
			return textResult("survived"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "secret", Description: "The secret.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return textResult(os.Getenv("MCP_SECRET")), nil, nil
		})
	return s
}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	if *addr == "" {
		if err := server().Run(context.Background(), &mcp.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") {
			log.Fatal(err)
		}
		return
	}
	srv := server()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	token := os.Getenv("MCP_TOKEN")
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})))
}
