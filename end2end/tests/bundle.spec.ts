// The learner never downloads the console: every page but a course and its
// resources is a lazy route whose view lives in a wasm chunk of its own
// (app/src/pages/lazy.rs, `cargo leptos build --split`).
import { expect, test, type Page } from "@playwright/test";
import { openHydrated, signIn } from "./fixtures";
import { adminApi, createCourse, specTenant } from "./course";

/** The `/pkg` files the page asks for from now on. */
function pkgRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on("request", (request) => {
    const path = new URL(request.url()).pathname;
    if (path.startsWith("/pkg/")) seen.push(path);
  });
  return seen;
}

const CHUNK = /\/pkg\/(split|chunk)_[^/]*\.wasm$/;

test("a learner's course page loads the main bundle and no chunk; sign-in loads only its own", async ({ page }) => {
  const course = await createCourse(await adminApi());
  const seen = pkgRequests(page);
  // What a learner's link opens: the main bundle alone.
  await openHydrated(page, `/s/${course.slug}`);
  expect(seen.some((path) => path.endsWith(".wasm")), seen.join(", ")).toBe(true);
  expect(seen.filter((path) => CHUNK.test(path))).toEqual([]);
  // The home page and sign-in are lazy too: each fetches its own view's
  // chunk (and whatever code it shares), never a console page's.
  await openHydrated(page, "/");
  await openHydrated(page, "/login");
  const views = seen.filter((path) => /\/pkg\/split___/.test(path));
  expect(views.filter((path) => /split___login_route_view_/.test(path)), seen.join(", ")).toHaveLength(1);
  expect(views.filter((path) => !/split___(home|login)_route_view_/.test(path)), seen.join(", ")).toEqual([]);
});

test("a console page loads its own chunk and hydrates, opened directly and reached by a link", async ({ page }) => {
  const owner = await specTenant();
  await openHydrated(page, "/login?next=/admin");
  await signIn(page, owner.email, owner.password);
  const tenant = page.getByRole("link", { name: owner.name });
  await expect(tenant).toBeVisible();
  const dashboard = (await tenant.getAttribute("href"))!;

  // Opened directly (a full page load): the router loads the dashboard's
  // chunk before it hydrates the page, and the page works.
  const seen = pkgRequests(page);
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await openHydrated(page, dashboard);
  await expect(page.getByRole("heading", { level: 1, name: owner.name })).toBeVisible();
  expect(seen.filter((path) => /\/pkg\/split___dashboard_route_view_/.test(path)), seen.join(", ")).toHaveLength(1);
  expect(seen.some((path) => /team_route/.test(path)), "nothing of the next page yet").toBe(false);

  // Reached by a client-side link: the router fetches that page's chunk.
  await page.getByRole("link", { name: "Team", exact: true }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Team");
  expect(seen.filter((path) => /\/pkg\/split___team_route_view_/.test(path)), seen.join(", ")).toHaveLength(1);
  expect(errors).toEqual([]);
});
