using System.ComponentModel.DataAnnotations;

namespace ChannelPool;

/// <summary>
/// How a pool sets its idle target, the idle count a refill fills back up to (<see cref="ChannelPoolOptions.IdleTarget"/>).
/// Fixed, the target is <see cref="ChannelPoolOptions.PoolSize"/>. Adaptive, it is headroom for arrivals, counting the
/// channels in use: the peak of channels in use over the last <see cref="Window"/> less those in use now, plus as many
/// again as are in use now (at most half the room left under <see cref="ChannelPoolOptions.MaxChannels"/>), plus the
/// channels used up while one opens; it rises at once, and once the peak has left the window the peak it holds halves
/// its distance to demand every <see cref="DecayHalfLife"/>.
/// </summary>
/// <remarks>
/// Fixed, the refill starts when the idle count falls to <see cref="ChannelPoolOptions.RefillThreshold"/> (half the
/// pool size by default). Adaptive, it starts as soon as the idle count falls below the target, so the pool keeps as
/// much headroom as the target wants and demand can grow by it without a caller waiting for an open; a
/// <see cref="ChannelPoolOptions.RefillThreshold"/> that is set keeps its share of the pool size instead. Either way
/// opens never take the pool past <see cref="ChannelPoolOptions.MaxChannels"/>, and none start while the circuit breaker
/// stops them. <c>docs/configuration.md</c> explains the rule and the defaults.
/// </remarks>
public sealed class IdleTargetOptions
{
    /// <summary>The default <see cref="Minimum"/>: two idle channels.</summary>
    public const int DefaultMinimum = 2;

    /// <summary>Creates options with every default: a fixed target.</summary>
    public IdleTargetOptions()
    {
    }

    /// <summary>Creates a copy of <paramref name="other"/>; values left <see langword="null"/> stay <see langword="null"/>.</summary>
    /// <param name="other">The options to copy.</param>
    public IdleTargetOptions(IdleTargetOptions other)
    {
        ArgumentNullException.ThrowIfNull(other);
        Mode = other.Mode;
        Minimum = other.Minimum;
        Window = other.Window;
        DecayHalfLife = other.DecayHalfLife;
    }

    /// <summary>Gets or sets whether the target is fixed at <see cref="ChannelPoolOptions.PoolSize"/> or follows demand. Defaults to <see cref="IdleTargetMode.Fixed"/>.</summary>
    public IdleTargetMode Mode { get; set; } = IdleTargetMode.Fixed;

    /// <summary>
    /// Gets or sets the lowest the adaptive target goes, so that a quiet pool still serves its next callers without
    /// an open on their path. Defaults to <see cref="DefaultMinimum"/>. At most <see cref="ChannelPoolOptions.MaxChannels"/>.
    /// </summary>
    [Range(1, int.MaxValue)]
    public int Minimum { get; set; } = DefaultMinimum;

    /// <summary>
    /// Gets or sets how long the adaptive target remembers a peak of demand. <see langword="null"/>, the default,
    /// follows <see cref="ChannelPoolOptions.ChannelLifetime"/>: holding a channel one lifetime longer costs one
    /// open, what opening it again would cost.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00.100", "1.00:00:00")]
    public TimeSpan? Window { get; set; }

    /// <summary>
    /// Gets or sets how fast the adaptive target comes down once a peak has left the <see cref="Window"/>: it halves
    /// its distance to demand every half-life. <see langword="null"/>, the default, is a third of the window.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00.100", "1.00:00:00")]
    public TimeSpan? DecayHalfLife { get; set; }
}
