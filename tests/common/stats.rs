//! The tests' own statistics, apart from storlab's (crates/stats): Student's t quantile from the
//! regularized incomplete beta function (continued fraction, Lentz's method; W. H. Press et al.,
//! Numerical Recipes, §6.4), and a sequential design's error by simulation with another
//! generator than storlab's. A figure storlab prints is recomputed with these.
#![allow(dead_code)]

pub fn ln_gamma(x: f64) -> f64 {
    // Lanczos, g = 7, n = 9.
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

pub fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let tiny = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
pub fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// P(|T| > t) for Student's t with `df` degrees of freedom.
pub fn t_two_sided(t: f64, df: f64) -> f64 {
    beta_inc(df / 2.0, 0.5, df / (df + t * t))
}

/// The t with P(|T| > t) = `p`.
pub fn t_critical(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1e7f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_two_sided(mid, df) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The error of a design over all its looks, by this test's own simulation (xorshift64* and
/// Marsaglia's polar method; another generator than storlab's).
pub fn simulated_error(nominal: f64, first: usize, last: usize, sequences: usize) -> f64 {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut uniform = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut normal = move || loop {
        let (u, v) = (2.0 * uniform() - 1.0, 2.0 * uniform() - 1.0);
        let s = u * u + v * v;
        if s > 0.0 && s < 1.0 {
            return u * (-2.0 * s.ln() / s).sqrt();
        }
    };
    let c: Vec<f64> = (0..=last)
        .map(|n| {
            if n >= first {
                t_critical(nominal, n as f64 - 1.0)
            } else {
                0.0
            }
        })
        .collect();
    let mut missed = 0;
    for _ in 0..sequences {
        let (mut sum, mut sq) = (0.0, 0.0);
        for (n, crit) in c.iter().enumerate().skip(1) {
            let z = normal();
            sum += z;
            sq += z * z;
            if n >= first {
                let nf = n as f64;
                let m = sum / nf;
                let sd = ((sq - nf * m * m) / (nf - 1.0)).sqrt();
                if (m / (sd / nf.sqrt())).abs() > *crit {
                    missed += 1;
                    break;
                }
            }
        }
    }
    missed as f64 / sequences as f64
}
