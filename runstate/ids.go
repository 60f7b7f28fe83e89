package runstate

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
)

// The ids of a run and of what it produces are stable strings: they are
// stored, shown to clients and parsed back (an interrupt id names its run).
// Every format is built here.

// runIDEncoding is lowercase base32 without padding: letters a-z and digits
// 2-7, so a run id never contains '-', '/' or ':'.
var runIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewRunID returns a new random run id: "run_" followed by 26 characters of
// lowercase base32 (a-z, 2-7) encoding 128 random bits, e.g.
// "run_mfrggzdfmztwq2lknnwg23tpob". It has no '-', so the ids derived from it
// ([MessageID], [InterruptID], [TransferID]) split unambiguously. It is safe
// for concurrent use.
func NewRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	var id [4 + 26]byte
	copy(id[:], "run_")
	runIDEncoding.Encode(id[4:], b[:])
	return string(id[:])
}

// MessageID returns the id of the n-th message of run's transcript,
// counting from 1 (the input is message 1): run + "-m" + n, e.g. "run_x-m3".
func MessageID(run string, n int) string {
	return run + "-m" + strconv.Itoa(n)
}

// InterruptID returns the id of the interrupt of run recorded by the
// checkpoint of the given step: run + "-i" + step, e.g. "run_x-i4".
// [RunOfInterrupt] reverses it.
func InterruptID(run string, step int) string {
	return run + "-i" + strconv.Itoa(step)
}

// RunOfInterrupt returns the run of an interrupt id made by [InterruptID]:
// what precedes its last "-i", which must be followed by a decimal step. ok
// is false when id is not of the form RUN-iSTEP with a non-empty RUN.
func RunOfInterrupt(id string) (run string, ok bool) {
	i := strings.LastIndex(id, "-i")
	if i <= 0 {
		return "", false
	}
	step := id[i+2:]
	if step == "" {
		return "", false
	}
	for _, c := range []byte(step) {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return id[:i], true
}

// TransferID returns the id of the n-th transfer taken in run, counting from
// 1: run + "-h" + n, e.g. "run_x-h2".
func TransferID(run string, n int) string {
	return run + "-h" + strconv.Itoa(n)
}

// ReturnID returns the id of the return of control to the caller of a
// return-mode transfer, from that transfer's id: transferID + "-r", e.g.
// "run_x-h2-r".
func ReturnID(transferID string) string {
	return transferID + "-r"
}

// ContinuationID returns the id of the hand-over of run to a background
// worker at the checkpoint of the given step: run + "-c" + step, e.g.
// "run_x-c3". It is stable, so that a repeated hand-over of the same step
// has the same id (package continuation keys its job and placeholder
// message with it).
func ContinuationID(run string, step int) string {
	return run + "-c" + strconv.Itoa(step)
}

// SubRunID returns the run id of the sub-run of an agent called as a tool:
// run + "/" + the tool call's id, e.g. "run_x/call_7".
func SubRunID(run, callID string) string {
	return run + "/" + callID
}
