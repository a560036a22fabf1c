import { expect, test } from "@playwright/test";
import {
  finishSignup,
  openHydrated,
  PASSWORD,
  register,
  requestSignup,
  serverCommand,
  signIn,
  uniqueEmail,
  waitForMail,
} from "./fixtures";

test("register, sign out, sign back in", async ({ page }) => {
  const email = uniqueEmail("journey");
  await openHydrated(page, "/register");
  await register(page, email, "Ada Lovelace");
  await expect(page.getByRole("status")).toContainText("Welcome, Ada Lovelace");
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav.getByRole("link", { name: "Ada Lovelace" })).toBeVisible();

  await nav.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("status")).toContainText("You have signed out");
  await expect(nav.getByRole("link", { name: "Sign in" })).toBeVisible();

  await nav.getByRole("link", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await signIn(page, email.toUpperCase());
  await expect(nav.getByRole("link", { name: "Ada Lovelace" })).toBeVisible();
  await page.reload();
  await expect(nav.getByRole("link", { name: "Ada Lovelace" })).toBeVisible();
});

test("wrong password and unknown email get the same clear message", async ({ page }) => {
  const email = uniqueEmail("wrong");
  await openHydrated(page, "/register");
  await register(page, email, "Wrong Pass");
  await page.getByRole("navigation", { name: "Main" }).getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("status")).toContainText("You have signed out");

  await openHydrated(page, "/login");
  await signIn(page, email, "not the right password");
  await expect(page.getByRole("alert")).toHaveText("The email or the password is wrong.");

  await openHydrated(page, "/login");
  await signIn(page, uniqueEmail("nobody"), PASSWORD);
  await expect(page.getByRole("alert")).toHaveText("The email or the password is wrong.");
});

test("registration errors are shown next to their field", async ({ page }) => {
  // An address the mailer cannot send to as written: the server says so.
  await openHydrated(page, "/register");
  await requestSignup(page, "a..b@example.com");
  await expect(page.locator("#email-error")).toContainText("valid email address");
  await expect(page.getByLabel("Email")).toHaveAttribute("aria-invalid", "true");

  // The link's form: the browser itself refuses a too-short password
  // (minlength), the server what the browser cannot check.
  const email = uniqueEmail("mismatch");
  await openHydrated(page, "/register");
  await requestSignup(page, email);
  await expect(page.getByRole("status").filter({ hasText: `We sent a mail to ${email}` })).toBeVisible();
  await finishSignup(page, email, "Shorty", "short-pw");
  const tooShort = await page
    .getByLabel("Password", { exact: true })
    .evaluate((el) => (el as HTMLInputElement).validity.tooShort);
  expect(tooShort).toBe(true);
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  await page.getByLabel("Repeat the password").fill("a different password");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.locator("#password_confirm-error")).toHaveText("The two passwords differ.");
  await expect(page.getByLabel("Repeat the password")).toHaveAttribute("aria-invalid", "true");
});

test("registering a taken address answers as any other and tells its owner", async ({ page }) => {
  const taken = uniqueEmail("taken");
  await openHydrated(page, "/register");
  await register(page, taken, "First");
  await expect(page.getByRole("status")).toContainText("Welcome, First");
  await page.getByRole("navigation", { name: "Main" }).getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("status")).toContainText("You have signed out");

  await openHydrated(page, "/register");
  await requestSignup(page, taken);
  await expect(page.getByRole("status").filter({ hasText: `We sent a mail to ${taken}` })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Sign in" })).toBeVisible();
  const note = await waitForMail(taken, "You already have an account");
  expect(note.text).toContain("/login");
  expect(note.text).not.toContain("token=");
});

test("too many sign-in attempts are throttled with a time to wait", async ({ page }) => {
  const email = uniqueEmail("throttle");
  await openHydrated(page, "/login");
  for (let i = 0; i < 10; i++) {
    await signIn(page, email, `wrong password ${i}`);
    await expect(page.getByRole("alert")).toHaveText("The email or the password is wrong.");
  }
  await signIn(page, email, "wrong password again");
  await expect(page.getByRole("alert")).toContainText("Too many sign-in attempts");
  await expect(page.getByRole("alert")).toContainText(/Try again in \d+ (minutes|seconds)/);
});

test("a disabled account is refused", async ({ page }) => {
  const email = uniqueEmail("disabled");
  await openHydrated(page, "/register");
  await register(page, email, "Soon Disabled");
  await expect(page.getByRole("status")).toContainText("Welcome");
  serverCommand("admin", "disable-account", "--email", email);

  await page.reload();
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav.getByRole("link", { name: "Sign in" })).toBeVisible();
  await openHydrated(page, "/login");
  await signIn(page, email);
  await expect(page.getByRole("alert")).toContainText("This account is disabled");
});

test.describe("without JavaScript", () => {
  test.use({ javaScriptEnabled: false });

  test("register, sign out and sign in with plain forms", async ({ page }) => {
    const email = uniqueEmail("nojs");
    await page.goto("/register");
    await register(page, email, "No Script", PASSWORD, { javaScript: false });
    await expect(page.getByRole("status")).toContainText("Welcome, No Script");
    const nav = page.getByRole("navigation", { name: "Main" });
    await nav.getByRole("button", { name: "Sign out" }).click();
    await expect(page.getByRole("status")).toContainText("You have signed out");

    await page.goto("/login");
    await signIn(page, email, "wrong password here");
    await expect(page.getByRole("alert")).toHaveText("The email or the password is wrong.");
    await signIn(page, email);
    await expect(nav.getByRole("link", { name: "No Script" })).toBeVisible();
  });
});

test("sign out everywhere ends the other browser's session too", async ({ browser }) => {
  const email = uniqueEmail("everywhere");
  const first = await browser.newContext();
  const second = await browser.newContext();
  const a = await first.newPage();
  const b = await second.newPage();
  await openHydrated(a, "/register");
  await register(a, email, "Two Devices");
  await expect(a.getByRole("status")).toContainText("Welcome");
  await openHydrated(b, "/login");
  await signIn(b, email);
  await expect(b.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Two Devices" })).toBeVisible();

  await openHydrated(a, "/account");
  await a.getByRole("button", { name: "Sign out everywhere" }).click();
  // Home, with the flash. For a moment the flash can show above the
  // account page, whose unverified address is a status card of its own:
  // the flash is found by what it says, and the account page must be gone.
  await expect(a).toHaveURL(/\/$/);
  await expect(a.getByRole("status").filter({ hasText: "signed out on every device" })).toBeVisible();
  await expect(a.getByRole("heading", { name: "Your account" })).toHaveCount(0);

  await b.reload();
  await expect(b.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Sign in" })).toBeVisible();
  await first.close();
  await second.close();
});
