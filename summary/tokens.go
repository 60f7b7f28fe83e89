package summary

import "github.com/batonhq/baton/message"

// Token estimates. They are deliberately simple, deterministic and the same
// everywhere a budget is applied, so that a budget means the same thing in
// selection, trimming, logs and tests; they are not a tokenizer.
const (
	// bytesPerToken is the average UTF-8 bytes per token of English text
	// across current tokenizers.
	bytesPerToken = 4
	// MessageOverheadTokens is counted once per message for its role and
	// framing.
	MessageOverheadTokens = 4
	// ImageTokens is counted for each image part.
	ImageTokens = 256
)

// ApproxTokens estimates the number of tokens of s: one per four bytes,
// rounded up. It is safe for concurrent use and does not allocate.
func ApproxTokens(s string) int {
	return (len(s) + bytesPerToken - 1) / bytesPerToken
}

// MessageTokens estimates the tokens of m as a model receives it:
// [MessageOverheadTokens], plus [ApproxTokens] of every text, reasoning and
// tool-result text, tool name and argument object, plus [ImageTokens] per
// image.
func MessageTokens(m *message.Message) int {
	n := MessageOverheadTokens
	for i := range m.Parts {
		p := &m.Parts[i]
		if p.Type == message.PartImage {
			n += ImageTokens
			continue
		}
		n += ApproxTokens(p.Text) + ApproxTokens(p.Name) + (len(p.Arguments)+bytesPerToken-1)/bytesPerToken
	}
	return n
}

// HistoryTokens is the sum of [MessageTokens] over msgs.
func HistoryTokens(msgs []message.Message) int {
	n := 0
	for i := range msgs {
		n += MessageTokens(&msgs[i])
	}
	return n
}
