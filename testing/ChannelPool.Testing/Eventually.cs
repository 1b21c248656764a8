using System.Diagnostics;

namespace ChannelPool.Testing;

/// <summary>
/// Waits for work on background threads to reach a state, polling a condition. It bounds the wait but asserts nothing
/// about timing: the deadline only turns a hang into a clear failure.
/// </summary>
public static class Eventually
{
    /// <summary>The longest a condition is waited for before the test fails.</summary>
    public static readonly TimeSpan Limit = TimeSpan.FromSeconds(15);

    /// <summary>Waits until <paramref name="condition"/> holds.</summary>
    /// <param name="condition">The state to wait for.</param>
    /// <param name="description">What is awaited, for the failure message.</param>
    /// <returns>A task that completes when the condition holds.</returns>
    /// <exception cref="TimeoutException">The condition did not hold within <see cref="Limit"/>.</exception>
    public static Task That(Func<bool> condition, string description) => That(condition, () => description);

    /// <summary>Waits until <paramref name="condition"/> holds; the description is built when the wait fails, so it can show the state then.</summary>
    /// <param name="condition">The state to wait for.</param>
    /// <param name="describe">Says what is awaited and what the state is, for the failure message.</param>
    /// <returns>A task that completes when the condition holds.</returns>
    /// <exception cref="TimeoutException">The condition did not hold within <see cref="Limit"/>.</exception>
    public static async Task That(Func<bool> condition, Func<string> describe)
    {
        ArgumentNullException.ThrowIfNull(condition);
        ArgumentNullException.ThrowIfNull(describe);
        var started = Stopwatch.GetTimestamp();
        while (!condition())
        {
            if (Stopwatch.GetElapsedTime(started) > Limit)
            {
                throw new TimeoutException($"Still waiting, after {Limit.TotalSeconds} s, until {describe()}.");
            }

            await Task.Delay(1);
        }
    }

    /// <summary>Bounds an awaited task so a bug turns into a failure instead of a hung test run.</summary>
    /// <param name="task">The task to await.</param>
    /// <returns>The same task, bounded.</returns>
    public static Task Within(this Task task) => task.WaitAsync(Limit);

    /// <summary>Bounds an awaited task so a bug turns into a failure instead of a hung test run.</summary>
    /// <typeparam name="T">The result type.</typeparam>
    /// <param name="task">The task to await.</param>
    /// <returns>The same task, bounded.</returns>
    public static Task<T> Within<T>(this Task<T> task) => task.WaitAsync(Limit);

    /// <summary>Bounds an awaited value task so a bug turns into a failure instead of a hung test run.</summary>
    /// <typeparam name="T">The result type.</typeparam>
    /// <param name="task">The task to await.</param>
    /// <returns>The same task, bounded.</returns>
    public static Task<T> Within<T>(this ValueTask<T> task) => task.AsTask().WaitAsync(Limit);
}
