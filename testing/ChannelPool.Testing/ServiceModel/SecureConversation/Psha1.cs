using System.Diagnostics.CodeAnalysis;
using System.Security.Cryptography;

namespace ChannelPool.Testing.ServiceModel.SecureConversation;

/// <summary>
/// P_SHA-1 from TLS 1.0 (RFC 2246, section 5), the key derivation of WS-Trust's computed key and of
/// WS-SecureConversation's derived keys: A(0) = seed, A(i) = HMAC(secret, A(i-1)), output = HMAC(secret, A(1) + seed) +
/// HMAC(secret, A(2) + seed) + ..., of which <c>length</c> bytes from <c>offset</c> are the key.
/// </summary>
public static class Psha1
{
    /// <summary>Derives <paramref name="length"/> key bytes, skipping the first <paramref name="offset"/>.</summary>
    /// <param name="secret">The HMAC key: the requestor's entropy for a computed key, the session key for a derived one.</param>
    /// <param name="seed">The seed: the issuer's entropy, or a derived key's label and nonce.</param>
    /// <param name="offset">How many bytes of output to skip.</param>
    /// <param name="length">How many bytes the key has.</param>
    /// <returns>The key.</returns>
    [SuppressMessage("Security", "CA5350:Do Not Use Weak Cryptographic Algorithms", Justification = "The February 2005 specifications define P_SHA-1; the client derives its keys with it.")]
    public static byte[] Derive(byte[] secret, byte[] seed, int offset, int length)
    {
        var output = new byte[offset + length];
        byte[] a = seed;
        var written = 0;
        while (written < output.Length)
        {
            a = HMACSHA1.HashData(secret.AsSpan(), a);
            byte[] chunk = HMACSHA1.HashData(secret.AsSpan(), [.. a, .. seed]);
            int count = Math.Min(chunk.Length, output.Length - written);
            chunk.AsSpan(0, count).CopyTo(output.AsSpan(written));
            written += count;
        }

        return output[offset..];
    }
}
