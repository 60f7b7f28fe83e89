package metric

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/internal/schemas"
)

func answer(ctx context.Context, turn int, user string, a *evalset.AnswerExpect, o *evalset.Outcome, judges Judges) []Check {
	var out []Check
	text := o.Answer
	if len(a.Contains) > 0 {
		out = append(out, contains(turn, a, text))
	}
	if a.Regex != "" {
		re, err := regexp.Compile(a.Regex)
		ok := err == nil && re.MatchString(text)
		out = append(out, boolCheck(Regex, turn, ok, fmt.Sprintf("want a match of %s in %s", a.Regex, quote(text))))
	}
	if a.JSONSchema != nil {
		out = append(out, jsonSchema(turn, a.JSONSchema, text))
	}
	if r := a.ROUGE1; r != nil {
		th := r.Threshold
		if th == 0 {
			th = evalset.DefaultROUGE1Threshold
		}
		score := ROUGE1F(text, r.Reference)
		out = append(out, check(ROUGE1, turn, score, th, fmt.Sprintf("ROUGE-1 %.2f against %s", score, quote(r.Reference))))
	}
	for i, r := range a.Rubrics {
		out = append(out, rubric(ctx, turn, i, user, &r, o, judges))
	}
	return out
}

// quote shortens a text for a detail.
func quote(s string) string {
	const max = 160
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return strconv.Quote(s)
}

func contains(turn int, a *evalset.AnswerExpect, text string) Check {
	found := 0
	var missing []string
	hay := text
	if a.IgnoreCase {
		hay = strings.ToLower(text)
	}
	for _, want := range a.Contains {
		needle := want
		if a.IgnoreCase {
			needle = strings.ToLower(want)
		}
		if strings.Contains(hay, needle) {
			found++
		} else {
			missing = append(missing, strconv.Quote(want))
		}
	}
	detail := "every text found"
	if len(missing) > 0 {
		detail = "missing " + strings.Join(missing, ", ") + " in " + quote(text)
	}
	return check(Contains, turn, float64(found)/float64(len(a.Contains)), 1, detail)
}

// fence matches an answer wrapped in a Markdown code block.
var fence = regexp.MustCompile("(?s)^\\s*```[a-zA-Z]*\\s*\\n(.*?)\\n?```\\s*$")

func jsonSchema(turn int, schema map[string]any, text string) Check {
	raw, err := json.Marshal(schema)
	var s *schemas.Schema
	if err == nil {
		s, err = schemas.Compile(raw)
	}
	if err != nil {
		return boolCheck(JSONSchema, turn, false, "invalid schema: "+err.Error())
	}
	doc := text
	if m := fence.FindStringSubmatch(text); m != nil {
		doc = m[1]
	}
	if err := s.Validate(json.RawMessage(doc)); err != nil {
		return boolCheck(JSONSchema, turn, false, fmt.Sprintf("the answer does not match the schema: %v", err))
	}
	return boolCheck(JSONSchema, turn, true, "the answer matches the schema")
}

// ROUGE1F returns the ROUGE-1 F-measure of candidate against reference:
// the harmonic mean of the unigram precision and recall, counting each
// word at most as often as the other text has it. Words are runs of letters
// and digits, compared in lower case (no stemming). Two empty texts score 1.
func ROUGE1F(candidate, reference string) float64 {
	c, r := words(candidate), words(reference)
	if len(c) == 0 || len(r) == 0 {
		if len(c) == 0 && len(r) == 0 {
			return 1
		}
		return 0
	}
	counts := map[string]int{}
	for _, w := range r {
		counts[w]++
	}
	overlap := 0
	for _, w := range c {
		if counts[w] > 0 {
			counts[w]--
			overlap++
		}
	}
	if overlap == 0 {
		return 0
	}
	p := float64(overlap) / float64(len(c))
	rc := float64(overlap) / float64(len(r))
	return 2 * p * rc / (p + rc)
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
