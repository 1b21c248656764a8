using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace ChannelPool.Testing;

/// <summary>One log event as a component under test wrote it.</summary>
/// <param name="Category">The logger category.</param>
/// <param name="Level">The level.</param>
/// <param name="EventId">The event id.</param>
/// <param name="Message">The formatted message.</param>
/// <param name="Exception">The exception logged with it, if any.</param>
public sealed record LogEntry(string Category, LogLevel Level, EventId EventId, string Message, Exception? Exception)
{
    /// <inheritdoc />
    public override string ToString() =>
        $"{Level,-11} {EventId.Id,3} {Message}{(Exception is null ? string.Empty : $" [{Exception.GetType().Name}: {Exception.Message}]")}";
}

/// <summary>Keeps every log event in memory, so tests can assert on them or print them when they fail.</summary>
public sealed class RecordingLoggerFactory : ILoggerFactory
{
    private readonly ConcurrentQueue<LogEntry> _entries = new();

    /// <summary>Gets every event logged so far, in order.</summary>
    public IReadOnlyList<LogEntry> Entries => [.. _entries];

    /// <inheritdoc />
    public ILogger CreateLogger(string categoryName) => new Logger(categoryName, _entries);

    /// <inheritdoc />
    public void AddProvider(ILoggerProvider provider)
    {
    }

    /// <inheritdoc />
    public void Dispose()
    {
    }

    private sealed class Logger(string category, ConcurrentQueue<LogEntry> entries) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
            entries.Enqueue(new LogEntry(category, logLevel, eventId, formatter(state, exception), exception));
    }
}
