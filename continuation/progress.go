package continuation

import "github.com/batonhq/baton/draft"

// progress turns a resumed run's events into draft text.
type progress struct {
	w        *draft.Writer
	streamed bool // text deltas of the current message were written
	sep      bool // a separator is due before the next text
}

func (p *progress) write(s string) {
	if p.sep {
		p.w.WriteString("\n\n")
		p.sep = false
	}
	p.w.WriteString(s)
}

func (p *progress) delta(s string) {
	p.write(s)
	p.streamed = true
}

func (p *progress) message(text string) {
	if !p.streamed && text != "" {
		p.write(text)
	}
	p.streamed = false
	p.sep = p.w.Text() != ""
}

func (p *progress) tool(name string) {
	p.write("Running " + name + "…")
	p.sep = true
}
