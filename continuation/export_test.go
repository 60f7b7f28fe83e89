package continuation

// For the package's external benchmarks: the benchmarks' network, owner
// and hand-over turn.
var (
	BenchNetwork = benchNetwork
	BenchTurn    = benchTurn
)

// BenchOwner is the owner of the benchmarks' runs.
const BenchOwner = owner
