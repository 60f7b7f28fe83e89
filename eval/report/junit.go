package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/eval"
)

// JUnit writes the report as JUnit XML, as CI systems read it: one test
// suite (the set), one test case per case, a failure for each case that
// fails a check or regressed, its details in the failure's text.
func JUnit(w io.Writer, r *eval.Report) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",cdata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		SystemOut *cdata   `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		Name      string     `xml:"name,attr"`
		Tests     int        `xml:"tests,attr"`
		Failures  int        `xml:"failures,attr"`
		Errors    int        `xml:"errors,attr"`
		Time      string     `xml:"time,attr"`
		Timestamp string     `xml:"timestamp,attr"`
		Cases     []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName  xml.Name    `xml:"testsuites"`
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Time     string      `xml:"time,attr"`
		Suites   []testsuite `xml:"testsuite"`
	}
	seconds := func(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }
	suite := testsuite{Name: r.Set, Tests: len(r.Cases), Failures: r.Summary.Failed, Time: seconds(r.DurationMS),
		Timestamp: r.StartedAt.UTC().Format("2006-01-02T15:04:05")}
	for _, c := range r.Cases {
		tc := testcase{Name: c.ID, Classname: "baton.eval." + r.Set, Time: seconds(c.Candidate.LatencyMS)}
		if out := checksText(c); out != "" {
			tc.SystemOut = &cdata{xmlSafe(out)}
		}
		if !c.Pass {
			var b strings.Builder
			details(&b, &eval.Report{Cases: []*eval.CaseResult{c}})
			tc.Failure = &failure{Message: failureMessage(c), Type: Result(c), Text: xmlSafe(strings.TrimSpace(b.String()))}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	doc := testsuites{Name: "baton eval", Tests: suite.Tests, Failures: suite.Failures, Time: suite.Time, Suites: []testsuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// xmlSafe replaces the characters XML cannot hold (control characters but
// tab and newlines, invalid UTF-8) with U+FFFD: CDATA sections are not
// escaped, and an answer may hold anything.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == utf8.RuneError, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// cdata is text kept as it is, newlines included.
type cdata struct {
	Text string `xml:",cdata"`
}

// failureMessage names what failed: "transfers, status under threshold;
// regressed: transfers".
func failureMessage(c *eval.CaseResult) string {
	var failed, regressed []string
	for _, ck := range c.Candidate.Checks {
		if !ck.Pass {
			failed = append(failed, fmt.Sprintf("turn %d %s", ck.Turn, checkName(ck)))
		}
	}
	for _, rg := range c.Regressions {
		regressed = append(regressed, fmt.Sprintf("turn %d %s", rg.Turn, rg.Metric))
	}
	var parts []string
	if len(failed) > 0 {
		parts = append(parts, "under threshold: "+strings.Join(failed, ", "))
	}
	if len(regressed) > 0 {
		parts = append(parts, "regressed: "+strings.Join(regressed, ", "))
	}
	if len(parts) == 0 {
		return "the case did not run"
	}
	return strings.Join(parts, "; ")
}

// checksText lists every check of the case's candidate with its score.
func checksText(c *eval.CaseResult) string {
	var b strings.Builder
	for _, ck := range c.Candidate.Checks {
		mark := "pass"
		if !ck.Pass {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "turn %d %s: %s (%s, threshold %s)\n", ck.Turn, checkName(ck), mark, trimFloat(ck.Score), trimFloat(ck.Threshold))
	}
	return b.String()
}
