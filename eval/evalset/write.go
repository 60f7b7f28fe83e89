package evalset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/goccy/go-yaml"
)

// Write writes s in format f (yaml or jsonl), readable by [Parse]. A YAML
// set starts with comment, if any (each line prefixed with "# ").
func Write(w io.Writer, s *Set, f Format, comment string) error {
	switch f {
	case FormatYAML:
		return writeYAML(w, s, comment)
	case FormatJSONL:
		return writeJSONL(w, s)
	}
	return fmt.Errorf("evalset: cannot write format %q (want yaml or jsonl)", f)
}

func writeYAML(w io.Writer, s *Set, comment string) error {
	j, err := marshal(s)
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return fmt.Errorf("evalset: write: %w", err)
	}
	var b bytes.Buffer
	if comment != "" {
		for _, line := range bytes.Split([]byte(comment), []byte("\n")) {
			b.WriteString("# ")
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	b.Write(y)
	_, err = w.Write(b.Bytes())
	return err
}

func writeJSONL(w io.Writer, s *Set) error {
	var h jsonlHeader
	h.Set = &struct {
		Version     int    `json:"version"`
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Network     string `json:"network,omitempty"`
	}{s.Version, s.Name, s.Description, s.Network}
	var b bytes.Buffer
	for _, v := range append([]any{h}, casesOf(s)...) {
		j, err := marshal(v)
		if err != nil {
			return err
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

func casesOf(s *Set) []any {
	out := make([]any, len(s.Cases))
	for i := range s.Cases {
		out[i] = &s.Cases[i]
	}
	return out
}

// marshal encodes v as JSON without escaping <, > and &, which are text a
// person reads.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("evalset: write: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
