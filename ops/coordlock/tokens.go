package coordlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// TokenDir holds the Bigtable API's tokens: one file per token, named
// after the SHA-256 of the token (the token itself is kept nowhere), that
// holds {"principal": NAME}.
const TokenDir = "/ls/local/cellar/tokens"

// TokenPath is the file of token.
func TokenPath(token string) string {
	sum := sha256.Sum256([]byte(token))
	return TokenDir + "/" + hex.EncodeToString(sum[:])
}

// TokenFile is the contents of a token's file.
type TokenFile struct {
	Principal string `json:"principal"`
}

// TokenFiles looks tokens up in the lock service (bigtableapi.Tokens).
type TokenFiles struct{ Session *Session }

// TokenPrincipal implements bigtableapi.Tokens.
func (t TokenFiles) TokenPrincipal(ctx context.Context, token string) (string, bool, error) {
	if token == "" {
		return "", false, nil
	}
	data, ok, err := t.Session.ReadFile(ctx, TokenPath(token))
	if err != nil || !ok {
		return "", false, err
	}
	var f TokenFile
	if err := json.Unmarshal(data, &f); err != nil || f.Principal == "" {
		return "", false, fmt.Errorf("token file %s: bad contents %q", TokenPath(token), data)
	}
	return f.Principal, true, nil
}
