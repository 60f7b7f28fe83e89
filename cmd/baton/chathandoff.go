package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/batonhq/baton/threadhandoff"
)

// previewed shows a thread handoff summary and asks what to do with it.
func (m *chatModel) previewed(msg previewMsg) tea.Cmd {
	m.mode, m.status = modeInput, ""
	if msg.err != nil {
		m.println("✗ thread handoff: " + msg.err.Error())
		return nil
	}
	p := msg.p
	m.proposal = p
	head := fmt.Sprintf("── thread handoff summary · for %s · %d messages · %d tokens", p.AssistantID, p.Messages, p.TokensUsed)
	if p.Truncated {
		head += " · truncated"
	}
	m.println(head + " ──")
	for _, line := range strings.Split(p.Markdown, "\n") {
		m.println("  " + line)
	}
	m.println("──")
	switch msg.mode {
	case handoffPreviewOnly:
		m.println("· preview only: nothing was written")
		m.proposal = nil
		return nil
	case handoffApply:
		return m.decide(threadhandoff.Decision{Type: threadhandoff.DecisionApprove})
	}
	m.mode = modeChoice
	return nil
}

// decide sends the decision on the current proposal.
func (m *chatModel) decide(d threadhandoff.Decision) tea.Cmd {
	p := m.proposal
	if p == nil {
		m.mode = modeInput
		return nil
	}
	m.mode, m.status = modeBusy, "applying the thread handoff…"
	if d.Type == threadhandoff.DecisionReject {
		m.status = "declining…"
	}
	return func() tea.Msg {
		out, err := m.be.Decide(m.ctx, p, d)
		return decideMsg{out: out, err: err}
	}
}

// decided reports a decision and switches to the child thread.
func (m *chatModel) decided(msg decideMsg) {
	m.mode, m.status = modeInput, ""
	m.editor.Blur()
	if msg.err != nil {
		m.println("✗ thread handoff: " + msg.err.Error())
		return
	}
	out := msg.out
	m.proposal = nil
	if !out.Applied {
		m.println("✗ " + out.Message)
		return
	}
	m.println("✓ " + out.Message)
	m.thread, m.threadName, m.agent = out.ChildThreadID, out.Summary.Title, out.AssistantID
	edited := ""
	if out.Edited {
		edited = " (edited)"
	}
	m.println(fmt.Sprintf("→ switched to thread %s%s, child of %s; the summary%s is in %s's memory for its first turn",
		out.ChildThreadID, quoteName(out.Summary.Title), out.ParentThreadID, edited, out.AssistantID))
}

// edit opens the summary in $EDITOR, or in the chat when it is unset.
func (m *chatModel) edit() tea.Cmd {
	editor := strings.Fields(os.Getenv("EDITOR"))
	if len(editor) == 0 {
		m.editor.SetValue(m.proposal.Markdown)
		m.editor.MoveToBegin()
		m.mode = modeEditInline
		m.editor.Focus()
		return nil
	}
	f, err := os.CreateTemp("", "baton-thread-handoff-*.md")
	if err == nil {
		_, err = f.WriteString(m.proposal.Markdown + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		m.println("✗ edit: " + err.Error())
		return nil
	}
	path := f.Name()
	m.mode, m.status = modeEditor, "editing in "+filepath.Base(editor[0])+"…"
	c := exec.Command(editor[0], append(editor[1:], path)...)
	return tea.ExecProcess(c, func(err error) tea.Msg { return editorDoneMsg{path: path, err: err} })
}

// edited takes the Markdown back from $EDITOR.
func (m *chatModel) edited(msg editorDoneMsg) tea.Cmd {
	b, err := os.ReadFile(msg.path)
	_ = os.Remove(msg.path)
	m.mode, m.status = modeChoice, ""
	switch {
	case msg.err != nil:
		m.println("✗ editor: " + msg.err.Error())
		return nil
	case err != nil:
		m.println("✗ edit: " + err.Error())
		return nil
	}
	return m.decideEdit(string(b))
}

// decideEdit approves the proposal with edited Markdown; its first
// heading, if changed, becomes the title (the child thread's name).
func (m *chatModel) decideEdit(md string) tea.Cmd {
	md = strings.TrimSpace(md)
	switch {
	case md == "":
		m.println("· the edited summary is empty: not applied")
		m.editor.Blur()
		m.mode = modeChoice
		return nil
	case md == strings.TrimSpace(m.proposal.Markdown):
		m.println("· the summary is unchanged")
		m.editor.Blur()
		m.mode = modeChoice
		return nil
	}
	d := threadhandoff.Decision{Type: threadhandoff.DecisionEdit, Markdown: md}
	if t := markdownTitle(md); t != "" && t != m.proposal.Summary.Title {
		d.Title = t
	}
	m.println("· edited summary:")
	for _, line := range strings.Split(md, "\n") {
		m.println("  " + line)
	}
	return m.decide(d)
}

// markdownTitle returns the text of the first heading of md, if it starts
// with one.
func markdownTitle(md string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(md), "\n")
	if !strings.HasPrefix(first, "#") {
		return ""
	}
	return strings.TrimSpace(strings.TrimLeft(first, "#"))
}
