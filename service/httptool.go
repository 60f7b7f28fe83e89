package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/agent"
)

// maxToolResponse caps the body an HTTP tool returns to the model.
const maxToolResponse = 1 << 20

// HTTPTool implements tool name by an HTTP POST of its JSON arguments to
// url (the --tool NAME=URL flag of every command). The call's idempotency
// key (run id + call id, stable across retries, resumes and processes) goes
// in the Idempotency-Key header, so that the service can de-duplicate a call
// repeated after a crash; Baton-Run-Id and Baton-Call-Id name the call. A
// 2xx body is the result; 408, 425, 429 and 5xx are transient (retried by
// the runner, honouring Retry-After); other statuses are errors the model
// sees.
func HTTPTool(name, url string, client *http.Client) ToolFunc {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(args))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		if ci, ok := agent.CallFromContext(ctx); ok {
			req.Header.Set("Idempotency-Key", ci.IdempotencyKey)
			req.Header.Set("Baton-Run-Id", ci.RunID)
			req.Header.Set("Baton-Call-Id", ci.CallID)
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", agent.Transient(fmt.Errorf("tool %s: %w", name, err), 0)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxToolResponse))
		if err != nil {
			return "", agent.Transient(fmt.Errorf("tool %s: read response: %w", name, err), 0)
		}
		switch c := resp.StatusCode; {
		case c >= 200 && c < 300:
			return string(body), nil
		case c == http.StatusRequestTimeout, c == http.StatusTooEarly, c == http.StatusTooManyRequests, c >= 500:
			after := time.Duration(0)
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				after = time.Duration(s) * time.Second
			}
			return "", agent.Transient(fmt.Errorf("tool %s: HTTP %d: %s", name, c, strings.TrimSpace(string(body))), after)
		}
		return "", errors.New("HTTP " + strconv.Itoa(resp.StatusCode) + ": " + strings.TrimSpace(string(body)))
	}
}

// ParseHTTPTool parses the --tool flag's NAME=URL.
func ParseHTTPTool(v string) (name, url string, err error) {
	name, raw, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return "", "", fmt.Errorf("want NAME=http(s)://URL, got %q", v)
	}
	if u, err := neturl.Parse(raw); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", fmt.Errorf("want NAME=http(s)://URL with a host, got %q", v)
	}
	return name, raw, nil
}
