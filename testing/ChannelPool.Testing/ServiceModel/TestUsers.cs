namespace ChannelPool.Testing.ServiceModel;

/// <summary>The small user store the UserName endpoints check credentials against.</summary>
public static class TestUsers
{
    /// <summary>A user the store knows.</summary>
    public const string Alice = "alice";

    /// <summary><see cref="Alice"/>'s password.</summary>
    public const string AlicePassword = "alice-secret";

    /// <summary>Another user the store knows.</summary>
    public const string Bob = "bob";

    /// <summary><see cref="Bob"/>'s password.</summary>
    public const string BobPassword = "bob-secret";

    private static readonly Dictionary<string, string> Passwords = new(StringComparer.Ordinal)
    {
        [Alice] = AlicePassword,
        [Bob] = BobPassword,
    };

    /// <summary>Checks a user name and password.</summary>
    /// <param name="userName">The user name.</param>
    /// <param name="password">The password.</param>
    /// <returns><see langword="true"/> when the store knows the user and the password matches.</returns>
    public static bool IsValid(string? userName, string? password) =>
        userName is not null && password is not null && Passwords.TryGetValue(userName, out var expected) && expected == password;
}
