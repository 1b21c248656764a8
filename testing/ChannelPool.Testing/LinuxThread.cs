using System.Globalization;

namespace ChannelPool.Testing;

/// <summary>Reads the calling thread's scheduling niceness from /proc on Linux.</summary>
public static class LinuxThread
{
    /// <summary>Gets the calling thread's nice value, or null where /proc/thread-self is not available.</summary>
    /// <returns>The nice value (-20 to 19), or null.</returns>
    public static int? CurrentNiceValue()
    {
        if (!OperatingSystem.IsLinux())
        {
            return null;
        }

        try
        {
            // The second field (comm) is in parentheses and may contain spaces; fields after it are space separated.
            // The nice value is field 19, the 17th after the closing parenthesis.
            var stat = File.ReadAllText("/proc/thread-self/stat");
            var fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
            return int.Parse(fields[16], CultureInfo.InvariantCulture);
        }
        catch (IOException)
        {
            return null;
        }
    }
}
