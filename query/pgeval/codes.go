package pgeval

// SQLSTATE codes the evaluator returns that package sqlstate does not
// name yet.
const (
	codeInvalidDatetimeFormat  = "22007"
	codeDatetimeOverflow       = "22008"
	codeOutOfMemory            = "53200"
	codeGroupingError          = "42803"
	codeCardinalityViolation   = "21000"
	codeAmbiguousColumn        = "42702"
	codeDuplicateAlias         = "42712"
	codeInvalidRowCountLimit   = "2201W"
	codeInvalidRowCountOffset  = "2201X"
	codeArraySubscriptError    = "2202E"
	codeInvalidColumnReference = "42P10"
	codeInvalidEscapeSequence  = "22025"
	codeInvalidRegex           = "2201B"
	codeWrongObjectType        = "42809"
	codeAmbiguousFunction      = "42725"
	codeUndefinedSchema        = "3F000"
	codeDatatypeMismatch       = "42804"
	codeSyntaxError            = "42601"
	codeInvalidParameterValue  = "22023"
	codeStringDataTruncation   = "22001"
	codeWindowingError         = "42P20"
	codeUndefinedObject        = "42704"
)
