package netspec

// FingerprintSpec is fingerprintSpec, for tests.
var FingerprintSpec = fingerprintSpec
