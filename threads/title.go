package threads

import "strings"

// maxTitle is the longest title [Title] gives, in bytes.
const maxTitle = 60

// Title returns the title of a thread whose first message is input: the
// message on one line (runs of white space as one space), cut at 60 bytes
// on a character boundary with an ellipsis. A new thread of [Service.Turn]
// is named so unless TurnOptions.Name is set.
func Title(input string) string {
	input = strings.Join(strings.Fields(input), " ")
	if len(input) > maxTitle {
		cut := maxTitle
		for cut > 0 && (input[cut]&0xC0) == 0x80 {
			cut--
		}
		input = strings.TrimRight(input[:cut], " ") + "…"
	}
	return input
}
