using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace ChannelPool.Hosting;

/// <summary>
/// Reports one pool's health: Healthy when warm with its breaker closed; Degraded when it is paused, idle channels are
/// at or below the refill threshold, a refill is in flight, or the breaker is probing; Unhealthy when the breaker is
/// open or no channel is open at all.
/// </summary>
/// <remarks>
/// The registration's failure status replaces Unhealthy, as health checks conventionally allow. A paused pool is
/// Degraded, not Unhealthy: someone paused it on purpose, and a liveness probe must not restart the application for it.
/// </remarks>
public sealed class ChannelPoolHealthCheck : IHealthCheck
{
    private readonly IChannelPool _pool;

    /// <summary>Creates a check for <paramref name="pool"/>.</summary>
    /// <param name="pool">The pool to report on.</param>
    public ChannelPoolHealthCheck(IChannelPool pool)
    {
        ArgumentNullException.ThrowIfNull(pool);
        _pool = pool;
    }

    /// <inheritdoc />
    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(context);
        var s = _pool.GetSnapshot();
        var data = new Dictionary<string, object>
        {
            ["idle"] = s.Idle,
            ["leased"] = s.Leased,
            ["opening"] = s.Opening,
            ["closing"] = s.Closing,
            ["waiting"] = s.Waiting,
            ["breaker"] = s.BreakerState.ToString(),
            ["paused"] = s.IsPaused,
            ["poolSize"] = _pool.PoolSize,
            ["idleTarget"] = s.IdleTarget,
            ["refillThreshold"] = _pool.RefillThreshold,
            ["maxChannels"] = _pool.MaxChannels,
        };

        var result = s switch
        {
            { IsPaused: true } => HealthCheckResult.Degraded(
                $"Pool '{_pool.Name}' is paused: it opens and hands out no channel until it is resumed ({s}).", data: data),
            { BreakerState: BreakerState.Open or BreakerState.Isolated } => new HealthCheckResult(
                context.Registration.FailureStatus, $"Pool '{_pool.Name}' cannot open channels: its circuit breaker is open ({s}).", data: data),
            { Idle: 0, Leased: 0 } => new HealthCheckResult(
                context.Registration.FailureStatus, $"Pool '{_pool.Name}' has no open channel ({s}).", data: data),
            { BreakerState: BreakerState.HalfOpen } => HealthCheckResult.Degraded(
                $"Pool '{_pool.Name}' is probing whether the server is back ({s}).", data: data),
            _ when s.Idle <= _pool.RefillThreshold || s.Opening > 0 => HealthCheckResult.Degraded(
                $"Pool '{_pool.Name}' is refilling: {s.Idle} idle against a refill threshold of {_pool.RefillThreshold} ({s}).", data: data),
            _ => HealthCheckResult.Healthy($"Pool '{_pool.Name}' is warm ({s}).", data),
        };
        return Task.FromResult(result);
    }
}
