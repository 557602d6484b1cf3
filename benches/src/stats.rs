//! Sample counts and statistics over measured times: how many iterations a budget allows, and
//! the least-squares line of time against pod size.

use std::time::Duration;

/// Iteration count for a time budget, from a first estimate of one iteration.
pub fn iterations(budget: Duration, one: Duration, min: usize, max: usize) -> usize {
    let one = one.max(Duration::from_micros(1));
    ((budget.as_secs_f64() / one.as_secs_f64()) as usize).clamp(min, max)
}

/// A least-squares line `y = intercept + slope * x` and its R².
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub intercept: f64,
    pub slope: f64,
    pub r2: f64,
}

pub fn fit(points: &[(f64, f64)]) -> Fit {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_tot: f64 = points.iter().map(|(_, y)| (y - my).powi(2)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|(x, y)| (y - (intercept + slope * x)).powi(2))
        .sum();
    Fit {
        intercept,
        slope,
        r2: 1.0 - ss_res / ss_tot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_fits_exactly() {
        let f = fit(&[(1.0, 3.0), (2.0, 5.0), (4.0, 9.0)]);
        assert_eq!(
            f,
            Fit {
                intercept: 1.0,
                slope: 2.0,
                r2: 1.0
            }
        );
    }

    #[test]
    fn iterations_stay_within_bounds() {
        let ms = Duration::from_millis;
        assert_eq!(iterations(ms(100), ms(1), 25, 4000), 100);
        assert_eq!(iterations(ms(100), ms(50), 25, 4000), 25);
        assert_eq!(iterations(ms(100), Duration::ZERO, 25, 4000), 4000);
    }
}
