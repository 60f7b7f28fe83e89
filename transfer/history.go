package transfer

// HistoryPolicy says which part of the source's history the target sees.
// It is persisted as a stable string.
type HistoryPolicy string

// History policies.
const (
	// HistoryFull hands on the source's whole working history (the default).
	HistoryFull HistoryPolicy = "full"
	// HistoryLastUser hands on only the last user message.
	HistoryLastUser HistoryPolicy = "last_user"
	// HistoryNone hands on no history: the target starts from one user
	// message that states the transfer and its reason.
	HistoryNone HistoryPolicy = "none"
)
